"""Issue 25 §1: every request fits the model's window, whatever the tools return.

The `scripted` provider refuses a prompt over its `context_window` like a real model, so
each run here would fail on an overflow; the tests also measure every request themselves.
A property test drives seeded random runs (tool results from 10 to 500,000 characters,
windows from 2,000 to 200,000 tokens, parallel calls, crashes at a compaction's commit) and
checks that no request passes the window and that every byte of every tool output can be
read back (from the message, or from the cache with session_cache_get).
"""

from __future__ import annotations

import asyncio
import math
import random
from typing import Any

import pytest

from runtime.clock import FakeClock
from runtime.engine.context import SUMMARY_INTRO
from runtime.errors import ModelError
from runtime.messages import Message, SummaryMessage, ToolResultMessage
from runtime.models.base import ModelRequest
from runtime.models.scripted import ScriptedModelClient
from runtime.models.tokens import prompt_tokens
from runtime.models.windows import prompt_budget
from runtime.spec import AgentfnSpec
from runtime.spec.models import ScriptedModel
from runtime.store.memory import MemoryStore
from runtime.tools.base import ToolContext
from runtime.tools.cache_tools import PAGE_MAX, session_cache_tools
from tests.runtime.engine.kit import call, make_spec, new_engine, run
from tests.runtime.engine.test_crash_recovery import FaultyStore, SimulatedCrash


def _with_window(spec: AgentfnSpec, window: int, **agent: Any) -> AgentfnSpec:
    data = spec.model_dump(mode="json", by_alias=True)
    data["models"]["m"]["context_window"] = window
    data["agents"]["a"].update(agent)
    return AgentfnSpec.model_validate(data)


def _requests(engine: Any) -> list[ModelRequest]:
    model: ScriptedModelClient = engine._model_cache["m"]
    return model.requests


def _size(request: ModelRequest) -> int:
    return prompt_tokens(request.system, request.tools, request.messages)


def _expected(size: int) -> str:
    """What the `big` test tool returns for `size` (tests/fixtures/engine/engine_tools)."""
    return ("0123456789abcdef" * (size // 16 + 1))[:size]


def _read_back(store: Any, run_id: str, result: ToolResultMessage, messages: list[Message]) -> str:
    """A tool's whole output as the model can read it: the message itself when it is whole,
    else every page of session_cache_get (the real tool, as the agent would call it)."""
    if result.full_output_ref is None:
        return result.content
    head = store.load_head(run_id)
    get = next(t for t in session_cache_tools() if t.name == "session_cache_get")
    outputs = [m for m in messages if isinstance(m, ToolResultMessage)]
    ctx = ToolContext(
        run_id, head.session_id, head.agent, "reader", blobs=store.blobs,
        session_outputs=lambda: outputs,
    )  # fmt: skip
    text, offset = "", 0
    while offset is not None:
        page = asyncio.run(
            get.call({"id": result.tool_call_id, "offset": offset, "limit": PAGE_MAX}, ctx)
        )
        text += page["content"]
        offset = page["next_offset"]
    return text


# ---- the scripted provider enforces its window ---------------------------------------


def test_the_scripted_model_refuses_a_prompt_over_its_window_like_a_real_provider() -> None:
    from runtime.messages import UserMessage
    from runtime.models.failures import ContextOverflow

    config = ScriptedModel(provider="scripted", context_window=2_000, script=[{"text": "hi"}])
    model = ScriptedModelClient("m", config)
    fits = ModelRequest(system="s", messages=[UserMessage(content="x" * 7_000)])
    assert asyncio.run(model.request(fits)).text == "hi"
    too_long = ModelRequest(system="s", messages=[UserMessage(content="x" * 8_100)])
    with pytest.raises(ContextOverflow, match="prompt is too long: 2031 tokens > 2000"):
        asyncio.run(model.request(too_long))


# ---- the measured case -------------------------------------------------------


def test_the_4000_token_case_sends_no_request_over_the_window_and_still_answers() -> None:
    """Measured on main before this change: 283, 297, 2,725, 5,263, … 10,106 tokens."""
    body = "".join(f"line {i:05d}: the quarterly figures, region by region. " for i in range(180))
    assert 9_000 < len(body) < 10_500  # ~2,400 tokens a read
    script: list[dict[str, Any]] = [
        {"text": f"Reading part {i}.", "tool_calls": [call("storage_read", {"path": f"r{i}.txt"})]}
        for i in range(7)
    ]
    script.append({"text": "Done: the figures are read."})
    spec = make_spec(script, tools=["builtin:storage_read"], max_turns=10)
    spec = _with_window(spec, 4_000)
    store = MemoryStore()
    for i in range(7):
        store.blobs.put(f"storage/a/r{i}.txt", f"[{i}] {body}".encode())
    engine = new_engine(spec, store)
    head = run(engine, "Read the seven reports.")
    assert head.status == "succeeded", head.error_message
    assert engine.result(head.run_id)["result"] == "Done: the figures are read."
    sizes = [_size(r) for r in _requests(engine)]
    assert len([r for r in _requests(engine) if r.purpose == "answer"]) == 8
    assert max(sizes) <= 4_000, sizes
    # Within what the window leaves beside the answer's reserve (a quarter of 4,000).
    answers = [_size(r) for r in _requests(engine) if r.purpose == "answer"]
    assert max(answers) <= 3_000, answers
    # The summary in force is summarised again with what follows it (it does not pile up),
    # and each stays within its quarter of the room the window leaves.
    summaries = [r for r in _requests(engine) if r.purpose == "summary"]
    assert len(summaries) >= 2
    assert all("User: " + SUMMARY_INTRO.strip() in r.messages[0].content for r in summaries[1:])
    messages = store.load_messages(store.load_head(head.run_id))
    written = [m for m in messages if isinstance(m, SummaryMessage)]
    assert written and all(len(m.content) <= 3_000 // 4 * 4 for m in written)
    # Every report is readable whole, byte for byte, from what the run keeps.
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 7
    for i, result in enumerate(results):
        assert _read_back(store, head.run_id, result, messages) == f"[{i}] {body}"


def test_a_result_too_large_for_its_share_is_a_preview_naming_its_cache_id() -> None:
    script: list[dict[str, Any]] = [
        {
            "tool_calls": [
                call("big", {"size": 40_000}, id="c1"),
                call("big", {"size": 40_001}, id="c2"),
            ]
        },
        {"text": "ok"},
    ]
    spec = _with_window(make_spec(script, tools=["big"]), 8_000)
    engine = new_engine(spec)
    head = run(engine)
    assert head.status == "succeeded", head.error_message
    last = [r for r in _requests(engine) if r.purpose == "answer"][-1]
    results = [m for m in last.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 2
    for result in results:
        assert "output truncated" in result.content
        assert f"session_cache_get(id={result.tool_call_id!r}, offset=" in result.content
    # Two parallel results share half of what the window leaves: together well inside it.
    assert _size(last) <= prompt_budget(spec.models["m"])


def test_a_user_message_that_cannot_fit_fails_at_once_with_context_overflow() -> None:
    spec = _with_window(make_spec([{"text": "never"}], tools=["big"]), 2_000)
    engine = new_engine(spec)
    head = run(engine, "x" * 8_000)  # 2,000 tokens: more than the window leaves a prompt
    assert head.status == "failed" and head.error_code == "CONTEXT_OVERFLOW", head.error_message
    assert "user's message" in (head.error_message or "")
    model = engine._model_cache.get("m")  # no model call was made (nor paid for)
    assert model is None or model.requests == []


def test_kept_turns_shrink_when_they_alone_do_not_fit() -> None:
    """Three turns of answers that write long texts (which placeholders cannot shorten)
    cannot all stay whole in a 4,000-token window: fewer are kept, the rest summarised."""
    script: list[dict[str, Any]] = [
        {"text": f"note {i} " + "w" * 3_000, "tool_calls": [call("big", {"size": 100 + i})]}
        for i in range(6)
    ]
    script.append({"text": "done"})
    spec = make_spec(script, tools=["big"], max_turns=10)
    spec = _with_window(spec, 4_000, compaction={"keep_turns": 3})
    engine = new_engine(spec)
    head = run(engine)
    assert head.status == "succeeded", head.error_message
    assert max(_size(r) for r in _requests(engine)) <= 3_000
    events = [
        e.data for e in engine.store.list_events(head.run_id) if e.type == "context_compacted"
    ]
    assert any(e.get("kept_turns") == "fewer" and e.get("summarised") for e in events), events


def test_a_summary_that_cannot_be_written_when_the_prompt_must_shrink_fails_clearly() -> None:
    script: list[dict[str, Any]] = [
        {"text": "w" * 6_000, "tool_calls": [call("big", {"size": 100 + i})]} for i in range(4)
    ]
    script.append({"text": "never"})
    spec = make_spec(script, tools=["big"], max_turns=10, compaction={"model": "s"})
    data = _with_window(spec, 4_000).model_dump(mode="json", by_alias=True)
    data["models"]["s"] = {"provider": "scripted", "script": [{"text": "x"}]}
    spec = AgentfnSpec.model_validate(data)

    class Broken:
        name, model_id = "s", "broken"

        async def request(self, request: ModelRequest) -> Any:
            raise ModelError("the summariser is down", provider="test")

    from runtime.models.factory import build_model
    from runtime.secrets import SecretResolver

    runs_on = spec.to_runtime()

    def models(name: str) -> Any:
        if name == "s":
            return Broken()
        return build_model(name, runs_on.models[name], SecretResolver(runs_on))

    engine = new_engine(spec, models=models)
    head = run(engine)
    assert head.status == "failed" and head.error_code == "CONTEXT_OVERFLOW"
    assert "summariser is down" in (head.error_message or "")
    assert max(_size(r) for r in _requests(engine)) <= 4_000  # nothing over was ever sent


# ---- the property: random runs -------------------------------------------------------


def _random_case(rng: random.Random) -> tuple[AgentfnSpec, list[list[int]]]:
    window = int(math.exp(rng.uniform(math.log(2_000), math.log(200_000))))
    turns: list[list[int]] = []
    for _ in range(rng.randint(2, 7)):
        calls = rng.choice([1, 1, 2, 3, 4])
        turns.append(
            [int(math.exp(rng.uniform(math.log(10), math.log(500_000)))) for _ in range(calls)]
        )
    script: list[dict[str, Any]] = []
    n = 0
    for sizes in turns:
        calls = []
        for size in sizes:
            n += 1
            calls.append(call("big", {"size": size + n}))  # distinct arguments
        script.append({"text": "w" * rng.choice([0, 50, 2_000]), "tool_calls": calls})
    script.append({"text": "finished"})
    spec = make_spec(script, tools=["big", "echo"], max_turns=len(turns) + 3)
    compaction = {"keep_turns": rng.randint(1, 4), "threshold": rng.choice([0.5, 0.8, 0.95])}
    return _with_window(spec, window, compaction=compaction), turns


def _compaction_commits(spec: AgentfnSpec) -> list[int]:
    store = MemoryStore()
    counting = FaultyStore(store, -1, "never")
    seen: list[int] = []
    original = counting.commit

    def watch(commit: Any) -> None:
        original(commit)
        if any(e.type == "context_compacted" for e in commit.events):
            seen.append(counting.commits)

    counting.commit = watch  # type: ignore[method-assign]
    run(new_engine(spec, counting))  # type: ignore[arg-type]
    return seen


def _check_run(spec: AgentfnSpec, store: MemoryStore, run_id: str, engines: list[Any]) -> None:
    window = spec.models["m"].context_window
    assert window is not None
    head = store.load_head(run_id)
    assert head.status == "succeeded", (window, head.error_message)
    for engine in engines:
        for request in _requests(engine):
            assert _size(request) <= window, (window, _size(request), request.purpose)
            if request.purpose == "answer":
                assert _size(request) <= prompt_budget(spec.models["m"])
    messages = store.load_messages(head)
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    for result in results:
        size = (result.inputs or {})["size"]
        whole = _read_back(store, run_id, result, messages)
        assert whole == _expected(size), (result.tool_call_id, size, len(whole))


@pytest.mark.parametrize("seed", range(10))
def test_random_runs_never_overflow_and_lose_no_tool_output(seed: int) -> None:
    rng = random.Random(seed)
    for _case in range(8):
        spec, _turns = _random_case(rng)
        crash_points = _compaction_commits(spec) if rng.random() < 0.5 else []
        store = MemoryStore()
        if not crash_points:
            engine = new_engine(spec, store)
            head = run(engine)
            _check_run(spec, store, head.run_id, [engine])
            continue
        phase = rng.choice(["before", "after"])
        faulty = FaultyStore(store, rng.choice(crash_points), phase)
        clock = FakeClock()
        engine = new_engine(spec, faulty, clock=clock)  # type: ignore[arg-type]
        with pytest.raises(SimulatedCrash):
            run(engine)
        assert faulty.crashed_commit is not None
        run_id = faulty.crashed_commit.head.run_id
        clock.advance(engine.lease_seconds + 1)
        resumed = new_engine(spec, store, clock=clock)
        asyncio.run(resumed.advance(run_id))
        _check_run(spec, store, run_id, [engine, resumed])
