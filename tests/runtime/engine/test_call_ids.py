"""Tool-call ids a provider did not send are generated unique across runs and sessions, and
every idempotency key and cache key includes the run: one run's call can never be taken for
another's."""

from __future__ import annotations

import asyncio

from runtime.messages import AssistantMessage, ToolResultMessage
from tests.runtime.engine.kit import call, make_spec, new_engine

# A script without ids, like Gemini or an OpenAI-compatible server that sends none.
SCRIPT = [
    {"tool_calls": [call("big", {"size": 20_000}), call("echo", {"text": "a"})]},
    {"text": "done"},
]


def _results(engine, head) -> list[ToolResultMessage]:  # type: ignore[no-untyped-def]
    return [m for m in engine.store.load_messages(head) if isinstance(m, ToolResultMessage)]


def test_generated_call_ids_differ_between_runs_of_a_session_and_within_an_answer() -> None:
    engine = new_engine(make_spec(SCRIPT, tools=["big", "echo"], tool_result_max_chars=1000))
    first = asyncio.run(engine.run("a", "one"))
    second = asyncio.run(engine.run("a", "two", first.session_id))
    ids = [
        c.id
        for head in (first, second)
        for m in engine.store.load_messages(head)
        if isinstance(m, AssistantMessage)
        for c in m.tool_calls
    ]
    assert len(ids) == 4 and len(set(ids)) == 4, ids
    assert all(i.startswith("call_") and len(i) >= 20 for i in ids)


def test_a_later_run_of_the_session_does_not_overwrite_an_earlier_runs_cached_output() -> None:
    engine = new_engine(make_spec(SCRIPT, tools=["big", "echo"], tool_result_max_chars=1000))
    first = asyncio.run(engine.run("a", "one"))
    second = asyncio.run(engine.run("a", "two", first.session_id))
    refs = [r.full_output_ref for head in (first, second) for r in _results(engine, head)]
    big_refs = [ref for ref in refs if ref]
    assert len(big_refs) == 2 and big_refs[0] != big_refs[1]
    assert first.run_id in big_refs[0] and second.run_id in big_refs[1]
    assert all(len(engine.store.blobs.get(ref)) == 20_000 for ref in big_refs)


def test_repeated_ids_from_a_provider_within_one_answer_are_made_unique() -> None:
    script = [
        {
            "tool_calls": [
                call("echo", {"text": "a"}, id="dup"),
                call("echo", {"text": "b"}, id="dup"),
            ]
        },
        {"text": "done"},
    ]
    engine = new_engine(make_spec(script, tools=["echo"]))
    head = asyncio.run(engine.run("a", "go"))
    assert head.status == "succeeded"
    results = _results(engine, head)
    assert [r.output for r in results] == ["echo: a", "echo: b"]  # both answered, in order
    assert results[0].tool_call_id == "dup" and results[1].tool_call_id != "dup"
