"""The tool-output cache: whole outputs in S3, compact messages, paging, reuse, isolation."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from runtime.messages import ToolResultMessage
from tests.runtime.engine.kit import CALLS, TOOLS, call, make_spec, new_engine, run


def _requests(engine: Any) -> list[Any]:
    return engine._model_cache["m"].requests


def test_a_long_output_is_cached_whole_and_paged_with_session_cache_get() -> None:
    script = [
        {"tool_calls": [call("big", {"size": 30_000}, id="call-1-1")]},
        {"tool_calls": [call("session_cache_list")]},
        {
            "tool_calls": [
                call("session_cache_get", {"id": "call-1-1", "offset": 29_500, "length": 400})
            ]
        },
        {"tool_calls": [call("session_cache_get", {"id": "call-1-1", "offset": 29_900})]},
        {"text": "read it all"},
    ]
    engine = new_engine(make_spec(script, tools=["big"], tool_result_max_chars=1000))
    head = run(engine)
    assert head.status == "succeeded"
    records = engine.result(head.run_id)["tool_calls"]
    seen = next(m for m in _requests(engine)[1].messages if isinstance(m, ToolResultMessage))
    assert "cached as id 'call-1-1'" in seen.content and "session_cache_get" in seen.content
    listing = records[1]["output"]
    assert listing == [
        {
            "id": "call-1-1",
            "tool": "big",
            "arguments": '{"size": 30000}',
            "size": 30_000,
            "success": True,
            "at": listing[0]["at"],
        }
    ]
    page = records[2]["output"]
    assert (page["offset"], page["length"], page["total"], page["next_offset"]) == (
        29_500,
        400,
        30_000,
        29_900,
    )
    expected = ("0123456789abcdef" * 2000)[29_500:29_900]
    assert page["content"] == expected
    last = records[3]["output"]
    assert last["length"] == 100 and last["next_offset"] is None


def test_cache_tools_are_offered_automatically_and_only_with_a_session() -> None:
    engine = new_engine(make_spec([{"text": "ok"}], tools=["echo"]))
    run(engine)
    assert {"session_cache_list", "session_cache_get"} <= {
        t.name for t in _requests(engine)[0].tools
    }
    engine = new_engine(make_spec([{"text": "ok"}], tools=["echo"], session={"enabled": False}))
    run(engine)
    assert "session_cache_list" not in {t.name for t in _requests(engine)[0].tools}


def test_a_session_cannot_read_another_sessions_cached_output() -> None:
    script = [
        {"tool_calls": [call("big", {"size": 5000}, id="call-1-1")]},
        {"tool_calls": [call("session_cache_get", {"id": "call-1-1"})]},
        {"text": "done"},
    ]
    engine = new_engine(make_spec(script, tools=["big"], tool_result_max_chars=1000))
    first = run(engine)
    own = engine.result(first.run_id)["tool_calls"][1]
    assert own["success"] and own["output"]["total"] == 5000
    other = asyncio.run(engine.run("a", "again"))  # a new session: same call ids, other cache
    assert other.session_id != first.session_id
    CALLS.clear()
    stranger = engine.result(other.run_id)["tool_calls"][1]
    assert stranger["success"] and stranger["output"]["total"] == 5000  # its own big output
    spec = make_spec(
        [{"tool_calls": [call("session_cache_get", {"id": "call-1-1"})]}, {"text": "x"}],
        tools=["echo"],
    )
    outsider = new_engine(spec, store=engine.store)
    head = asyncio.run(outsider.run("a", "peek"))
    denied = outsider.result(head.run_id)["tool_calls"][0]
    assert (
        denied["success"] is False
        and "no cached output with id 'call-1-1' in this session" in denied["output"]["error"]
    )


def test_identical_read_only_calls_are_answered_from_the_cache_when_the_spec_asks() -> None:
    TOOLS["echo_cached"] = {**TOOLS["echo"], "cache_reuse": True}
    try:
        script = [
            {"tool_calls": [call("echo_cached", {"text": "hi"}, id="call-1-1")]},
            {
                "tool_calls": [
                    call("echo_cached", {"text": "hi"}),
                    call("echo_cached", {"text": "other"}),
                ]
            },
            {"text": "done"},
        ]
        engine = new_engine(make_spec(script, tools=["echo_cached"]))
        head = run(engine)
        records = engine.result(head.run_id)["tool_calls"]
        assert [c[1]["text"] for c in CALLS] == ["hi", "other"]  # the repeat never ran
        assert records[1]["output"] == "echo: hi" and records[1]["success"]
        messages = engine.store.load_messages(head)
        reused = [m for m in messages if isinstance(m, ToolResultMessage) and m.reused_from]
        assert [m.reused_from for m in reused] == ["call-1-1"]
        # A later run of the same session reuses it too.
        later = asyncio.run(engine.run("a", "again", head.session_id))
        assert later.status == "succeeded"
    finally:
        del TOOLS["echo_cached"]


def test_reuse_is_off_by_default() -> None:
    script = [
        {"tool_calls": [call("echo", {"text": "hi"})]},
        {"tool_calls": [call("echo", {"text": "hi"})]},
        {"text": "ok"},
    ]
    run(new_engine(make_spec(script, tools=["echo"])))
    assert len(CALLS) == 2


def test_storage_tools_read_write_and_list_inside_the_prefix_only() -> None:
    script = [
        {"tool_calls": [call("storage_write", {"path": "notes/today.txt", "content": "hello"})]},
        {
            "tool_calls": [
                call("storage_read", {"path": "notes/today.txt"}),
                call("storage_read", {"path": "notes/"}),
            ]
        },
        {
            "tool_calls": [
                call("storage_read", {"path": "../other/secret.txt"}),
                call("storage_write", {"path": "/etc/x", "content": "no"}),
            ]
        },
        {"text": "done"},
    ]
    spec = make_spec(
        script,
        tools=["builtin:storage_read", "builtin:storage_write"],
        storage_prefix="team/{agent}/",
    )
    engine = new_engine(spec)
    records = engine.result(run(engine).run_id)["tool_calls"]
    assert records[0]["output"] == {"path": "notes/today.txt", "size": 5}
    assert engine.store.blobs.get("team/a/notes/today.txt") == b"hello"
    assert records[1]["output"] == "hello"
    assert records[2]["output"] == [{"path": "notes/today.txt", "size": 5}]
    assert [r["success"] for r in records[3:]] == [False, False]
    assert "'..' are not allowed" in records[3]["output"]["error"]


def test_three_read_only_calls_run_together_and_others_keep_their_order() -> None:
    script = [
        {
            "tool_calls": [
                call("aslow", {"label": "a", "seconds": 0.3}),
                call("aslow", {"label": "b", "seconds": 0.3}),
                call("aslow", {"label": "c", "seconds": 0.3}),
            ]
        },
        {
            "tool_calls": [
                call("fail", {"reason": "first"}),
                call("charge", {"amount": 1}),
                call("fail", {"reason": "third"}),
            ]
        },
        {"text": "done"},
    ]
    engine = new_engine(make_spec(script, tools=["aslow", "fail", "charge"]))
    CALLS.clear()
    head = engine.start("a", "go")
    started = time.perf_counter()
    head = asyncio.run(engine.advance(head.run_id))
    elapsed = time.perf_counter() - started
    assert head.status == "succeeded"
    assert elapsed < 0.6, elapsed  # three 300 ms calls, concurrently
    records = engine.result(head.run_id)["tool_calls"]
    assert [r["inputs"].get("label") for r in records[:3]] == ["a", "b", "c"]  # model order
    assert [c[0] for c in CALLS[3:]] == ["fail", "charge", "fail"]
    assert [r["tool_name"] for r in records[3:]] == ["fail", "charge", "fail"]
