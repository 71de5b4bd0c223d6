"""Context management: a run's prompt stays inside its model's window (runtime.engine.context).

Placeholders first (lossless: the output is read back by id), then a summary, each a commit;
a provider's "prompt too long" compacts and retries once; three failures stop the attempts.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from runtime.clock import FakeClock
from runtime.engine.context import SUMMARY_INTRO, prompt_tokens
from runtime.errors import ModelError
from runtime.messages import SummaryMessage, ToolResultMessage, UserMessage
from runtime.models.base import ModelRequest, ModelResponse
from runtime.models.scripted import ScriptedModelClient
from runtime.spec import AgentfnSpec
from runtime.store.memory import MemoryStore
from tests.runtime.engine.kit import call, make_spec, new_engine, run
from tests.runtime.engine.test_crash_recovery import FaultyStore, SimulatedCrash

WINDOW = 4_000  # tokens; the threshold (0.8) is 3,200
SIZE = 3_000  # characters of each tool output: about 750 tokens


def _spec(
    turns: int, *, size: int = SIZE, window: int = WINDOW, text: int = 0, **agent: Any
) -> AgentfnSpec:
    """`turns` calls of `big` (outputs of `size` characters), each answer saying `text`
    characters of its own (what placeholders cannot shorten), then a final answer."""
    script: list[dict[str, Any]] = [
        {"text": f"step {i} " + "w" * text, "tool_calls": [call("big", {"size": size + i})]}
        for i in range(turns)
    ]
    script.append({"text": "All done."})
    spec = make_spec(script, tools=["big", "echo"], max_turns=turns + 5, **agent)
    data = spec.model_dump(mode="json", by_alias=True)
    data["models"]["m"]["context_window"] = window
    data["models"].setdefault("s", {"provider": "scripted", "script": [{"text": "unused"}]})
    return AgentfnSpec.model_validate(data)


def _requests(engine: Any, name: str = "m") -> list[ModelRequest]:
    model: ScriptedModelClient = engine._model_cache[name]
    return [r for r in model.requests if r.purpose == "answer"]


def _events(engine: Any, run_id: str, kind: str) -> list[dict[str, Any]]:
    events = engine.store.list_events(run_id, limit=10_000)
    return [e.data for e in events if e.type == kind]


def _size(request: ModelRequest) -> int:
    return prompt_tokens(request.system, request.tools, request.messages)


def test_old_tool_results_become_placeholders_that_read_back_whole() -> None:
    script: list[dict[str, Any]] = [
        {"tool_calls": [call("big", {"size": SIZE + i})]} for i in range(5)
    ]
    script.append(
        {"tool_calls": [call("session_cache_get", {"id": "PLACEHOLDER", "length": 50_000})]}
    )
    script.append({"text": "done"})
    spec = make_spec(script, tools=["big"], max_turns=10)
    data = spec.model_dump(mode="json", by_alias=True)
    data["models"]["m"]["context_window"] = WINDOW
    spec = AgentfnSpec.model_validate(data)
    # The model reads the placeholder's id back: found at run time, so patch the script.
    engine = new_engine(spec)
    client: ScriptedModelClient = engine._build_model("m")  # type: ignore[assignment]
    engine._model_cache["m"] = client
    original = client.request

    async def reading(request: ModelRequest) -> ModelResponse:
        response = await original(request)
        for c in response.tool_calls:
            if c.name == "session_cache_get":
                pruned = [
                    m
                    for m in request.messages
                    if isinstance(m, ToolResultMessage) and "removed from the context" in m.content
                ]
                assert pruned, "a placeholder was sent before this call"
                c.arguments = {"id": pruned[0].tool_call_id, "length": 50_000}
        return response

    client.request = reading  # type: ignore[method-assign]
    head = run(engine)
    assert head.status == "succeeded", head.error_message
    requests = _requests(engine)
    # Every prompt stayed under the threshold once compacted.
    assert all(r.estimated_tokens <= WINDOW * 0.8 for r in requests), [
        r.estimated_tokens for r in requests
    ]
    assert max(_size(r) for r in requests) <= WINDOW * 0.8
    sixth = requests[5]
    results = [m for m in sixth.messages if isinstance(m, ToolResultMessage)]
    placeholders = [m for m in results if "removed from the context" in m.content]
    whole = [m for m in results if m not in placeholders]
    assert len(placeholders) == 2 and len(whole) == 3  # the last 3 turns stay whole
    assert "session_cache_get(id=" in placeholders[0].content
    # Read back whole, character for character, through the cache.
    first_output = ("0123456789abcdef" * (SIZE // 16 + 1))[:SIZE]
    record = engine.result(head.run_id)["tool_calls"][-1]
    assert record["tool_name"] == "session_cache_get" and record["success"]
    assert record["output"]["content"] == first_output
    compacted = _events(engine, head.run_id, "context_compacted")
    assert sum(e["pruned"] for e in compacted) >= 2 and all(e["ok"] for e in compacted)
    assert compacted[0]["before"] > compacted[0]["limit"] >= compacted[0]["after"]
    # Nothing persisted was rewritten: the history keeps every output whole.
    stored = engine.store.load_messages(engine.store.load_head(head.run_id))
    outputs = [m for m in stored if isinstance(m, ToolResultMessage) and m.tool_name == "big"]
    assert len(outputs) == 5 and all(len(m.content) >= SIZE for m in outputs)


def test_when_placeholders_are_not_enough_the_older_conversation_is_summarised() -> None:
    spec = _spec(8, size=5_000, text=2_000, compaction={"model": "s", "keep_turns": 1})
    engine = new_engine(spec)
    head = run(engine, "Find the figures for ORD-7.")
    assert head.status == "succeeded", head.error_message
    summaries = [r for r in engine._model_cache["s"].requests if r.purpose == "summary"]
    assert summaries, "the summarising model was asked"
    assert "ORD-7" in summaries[0].messages[0].content  # it saw the older conversation
    final = engine.store.load_head(head.run_id)
    assert final.context.base > 0 and final.context.summary_seq is not None
    stored = engine.store.load_messages(final)
    assert isinstance(stored[final.context.summary_seq], SummaryMessage)
    after = _requests(engine)[-1]
    first = after.messages[0]
    assert isinstance(first, UserMessage) and first.content.startswith(SUMMARY_INTRO)
    assert all(r.estimated_tokens <= WINDOW for r in _requests(engine))
    events = _events(engine, head.run_id, "context_compacted")
    assert any(e.get("summarised") and e["summary_model"] == "s" for e in events)
    # The summary's tokens count in the run's usage.
    result = engine.result(head.run_id)
    assert result["tokens_input"] >= sum(
        r.usage.input_tokens for r in [stored[final.context.summary_seq]]
    )


def test_a_300_turn_run_keeps_its_prompt_under_the_window() -> None:
    spec = _spec(300, size=1_500, window=8_000)
    engine = new_engine(spec)
    head = run(engine)
    assert head.status == "succeeded", head.error_message
    requests = _requests(engine)
    assert len(requests) == 301
    largest = max(_size(r) for r in requests)
    assert largest <= 8_000, largest
    assert engine.store.load_head(head.run_id).context.compactions >= 5


def test_a_long_run_loads_from_its_last_summary_not_its_start() -> None:
    spec = _spec(200, size=1_500, window=8_000)
    store = MemoryStore()
    engine = new_engine(spec, store)
    head = run(engine)
    final = store.load_head(head.run_id)
    assert final.msg_seq > 400 and final.context.base > 250
    loaded = len(store.load_messages(final, final.context.base))
    # What follows the summary (bounded by the window), not the run's 400+ messages.
    assert loaded < final.msg_seq // 3, (loaded, final.msg_seq)
    before = store.stats.messages_loaded
    engine2 = new_engine(spec, store)
    asyncio.run(engine2.advance(head.run_id))  # a finished run: loads nothing
    assert store.stats.messages_loaded == before


def test_a_prompt_too_long_answer_compacts_and_retries_once() -> None:
    too_long = {
        "status": 400,
        "code": "invalid_request_error",
        "message": "prompt is too long: 215000 tokens > 200000 maximum",
    }
    script: list[dict[str, Any]] = [
        {"tool_calls": [call("big", {"size": 3_000})]},
        {"tool_calls": [call("big", {"size": 3_001})]},
        {"error": too_long},
        {"text": "fits now"},
    ]
    spec = make_spec(
        script,
        tools=["big"],
        compaction={"keep_turns": 1, "model": "s"},
        models={"s": {"provider": "scripted", "script": [{"text": "x"}]}},
    )
    engine = new_engine(spec)
    head = run(engine)
    assert head.status == "succeeded", head.error_message
    assert engine.result(head.run_id)["result"] == "fits now"
    events = _events(engine, head.run_id, "context_compacted")
    assert len(events) == 1 and events[0]["reason"].startswith("the provider said")
    assert events[0]["summarised"]  # forced: summarised even under the threshold


def test_a_second_prompt_too_long_fails_the_run_with_context_overflow() -> None:
    too_long = {"status": 400, "message": "This model's maximum context length is 8192 tokens"}
    script: list[dict[str, Any]] = [
        {"tool_calls": [call("big", {"size": 3_000})]},
        {"tool_calls": [call("big", {"size": 3_001})]},
        {"error": too_long},
        {"error": too_long},
        {"text": "never"},
    ]
    spec = make_spec(
        script,
        tools=["big"],
        compaction={"keep_turns": 1, "model": "s"},
        models={"s": {"provider": "scripted", "script": [{"text": "x"}]}},
    )
    head = run(new_engine(spec))
    assert head.status == "failed"
    assert head.error_code == "CONTEXT_OVERFLOW", head.error_message
    assert "context window" in (head.error_message or "")


class _BrokenSummariser:
    name = "s"
    model_id = "broken"

    def __init__(self) -> None:
        self.calls = 0

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        raise ModelError("the summariser is down", provider="test")


def _models(spec: AgentfnSpec, broken: _BrokenSummariser) -> Any:
    from runtime.models.factory import build_model
    from runtime.secrets import SecretResolver

    def build(name: str) -> Any:
        if name == "s":
            return broken
        runs_on = spec.to_runtime()
        return build_model(name, runs_on.models[name], SecretResolver(runs_on))

    return build


def test_after_three_failed_compactions_it_stops_trying_and_the_run_goes_on() -> None:
    spec = _spec(10, size=6_000, text=2_000, compaction={"model": "s", "keep_turns": 1})
    data = spec.model_dump(mode="json", by_alias=True)
    data["models"]["m"]["context_window"] = 50_000  # the model copes; the estimate does not
    data["agents"]["a"]["compaction"]["threshold"] = 0.1
    spec = AgentfnSpec.model_validate(data)
    broken = _BrokenSummariser()
    engine = new_engine(spec, models=_models(spec, broken))
    head = run(engine)
    assert head.status == "succeeded", head.error_message  # the model still took it
    final = engine.store.load_head(head.run_id)
    assert final.context.failures == 3 and broken.calls == 3
    events = _events(engine, head.run_id, "context_compacted")
    failed = [e for e in events if not e["ok"]]
    assert len(failed) == 3 and all("summariser is down" in e["error"] for e in failed)
    assert events[-1] is failed[-1] and failed[-1]["failures"] == 3  # none after the third


def test_tool_definitions_that_fill_the_window_fail_the_run_clearly() -> None:
    spec = make_spec([{"text": "hi"}], tools=["big"])
    data = spec.model_dump(mode="json", by_alias=True)
    data["models"]["m"]["context_window"] = 1_024
    data["tools"]["big"]["description"] = "Big output. " * 300  # ~900 tokens of definition
    spec = AgentfnSpec.model_validate(data)
    data["agents"]["a"]["compaction"] = {"threshold": 0.1}  # so the check runs at once
    head = run(new_engine(AgentfnSpec.model_validate(data)))
    assert head.status == "failed" and head.error_code == "CONTEXT_OVERFLOW"
    assert "definitions of" in (head.error_message or "") and "context_window" in (
        head.error_message or ""
    )


@pytest.mark.parametrize("phase", ["before", "after"])
def test_a_crash_at_the_compaction_commit(phase: str) -> None:
    spec = _spec(8, size=5_000, text=2_000, compaction={"model": "s", "keep_turns": 1})
    baseline = new_engine(spec)
    expected = baseline.result(run(baseline).run_id)
    first_summary_commit = _first_summary_commit(spec)
    store = MemoryStore()
    faulty = FaultyStore(store, first_summary_commit, phase)
    clock = FakeClock()
    engine = new_engine(spec, faulty, clock=clock)  # type: ignore[arg-type]
    with pytest.raises(SimulatedCrash):
        run(engine)
    asked_before_crash = len(
        [r for r in engine._model_cache["s"].requests if r.purpose == "summary"]
    )
    run_id = faulty.crashed_commit.head.run_id  # type: ignore[union-attr]
    clock.advance(engine.lease_seconds + 1)
    resumed = new_engine(spec, store, clock=clock)
    head = asyncio.run(resumed.advance(run_id))
    assert head.status == "succeeded", head.error_message
    asked_after = len([r for r in resumed._model_cache["s"].requests if r.purpose == "summary"])
    summaries = [
        m for m in store.load_messages(store.load_head(run_id)) if isinstance(m, SummaryMessage)
    ]
    if phase == "before":  # lost: done again, once
        assert asked_before_crash == 1 and asked_after >= 1
    else:  # committed: never asked again for that one
        assert summaries[0].content  # kept
        assert asked_after == len(summaries) - 1
    got = resumed.result(run_id)
    assert got["result"] == expected["result"]
    assert [c["inputs"] for c in got["tool_calls"]] == [c["inputs"] for c in expected["tool_calls"]]


def _first_summary_commit(spec: AgentfnSpec) -> int:
    store = MemoryStore()
    counting = FaultyStore(store, -1, "never")
    engine = new_engine(spec, counting)  # type: ignore[arg-type]
    seen: list[int] = []
    original = counting.commit

    def watch(commit: Any) -> None:
        original(commit)
        if any(isinstance(m, SummaryMessage) for _, m in commit.messages):
            seen.append(counting.commits)

    counting.commit = watch  # type: ignore[method-assign]
    run(engine)
    assert seen
    return seen[0]


def test_session_history_tool_outputs_are_pruned_and_readable_in_a_later_run() -> None:
    script: list[dict[str, Any]] = [
        {"tool_calls": [call("big", {"size": 1_900})]},
        {"tool_calls": [call("big", {"size": 1_901})]},
        {"text": "first run done"},
        {"tool_calls": [call("big", {"size": 6_000})]},
        {"text": "second run done"},
    ]
    spec = make_spec(script, tools=["big", "echo"])
    data = spec.model_dump(mode="json", by_alias=True)
    data["models"]["m"]["context_window"] = 2_500
    spec = AgentfnSpec.model_validate(data)
    engine = new_engine(spec)
    first = run(engine, "first", session_id="s1")
    assert first.status == "succeeded"
    earlier = {c["tool_call_id"] for c in engine.result(first.run_id)["tool_calls"]}
    second = run(engine, "second", session_id="s1")
    assert second.status == "succeeded", second.error_message
    last = _requests(engine)[-1]
    history = [
        m for m in last.messages if isinstance(m, ToolResultMessage) and m.tool_call_id in earlier
    ]
    assert history and all("removed from the context" in m.content for m in history)
    state = engine.store.load_head(second.run_id).context
    assert state.history_pruned


def test_a_compacted_run_on_dynamodb_loads_from_its_summary_and_resumes() -> None:
    from infra.local.aws import embedded_aws
    from runtime.engine.loop import Engine

    spec = _spec(12, size=5_000, text=2_000, compaction={"model": "s", "keep_turns": 1})
    expected = new_engine(spec)
    expected_result = expected.result(run(expected).run_id)
    with embedded_aws() as clients:
        store = clients.store()
        engine = Engine(spec, store, clock=FakeClock())
        head = asyncio.run(engine.run("a", "hello"))
        assert head.status == "succeeded", head.error_message
        final = store.load_head(head.run_id)
        assert final.context.base > 0
        tail = store.load_messages(final, final.context.base)
        whole = store.load_messages(final)
        assert tail == whole[final.context.base :] and len(tail) < len(whole)
        got = engine.result(head.run_id)
        assert got["result"] == expected_result["result"]
        assert [c["inputs"] for c in got["tool_calls"]] == [
            c["inputs"] for c in expected_result["tool_calls"]
        ]


def test_agentfn_run_shows_each_compaction() -> None:
    import io

    from infra.local.progress import Progress

    stream = io.StringIO()
    spec = _spec(8, size=5_000, text=2_000, compaction={"model": "s", "keep_turns": 1})
    head = run(new_engine(spec, listener=Progress(stream, True)))
    assert head.status == "succeeded"
    lines = [line for line in stream.getvalue().splitlines() if "context compacted" in line]
    assert lines, stream.getvalue()
    assert any("messages summarised by s" in line for line in lines), lines
    assert all(" → " in line and "tokens" in line for line in lines)


def test_a_prompt_too_long_with_nothing_to_compact_fails_at_once() -> None:
    """Issue 22, point 14: the first answer of a run has nothing older than the turns kept
    whole, so compacting cannot change the prompt; sending the same prompt again would only
    pay for a second refusal. The run fails with CONTEXT_OVERFLOW after one model call."""
    too_long = {"status": 400, "message": "prompt is too long: 215000 tokens > 200000 maximum"}
    script: list[dict[str, Any]] = [{"error": too_long}, {"text": "never sent"}]
    spec = make_spec(
        script,
        tools=[],
        compaction={"model": "s"},
        models={"s": {"provider": "scripted", "script": [{"text": "x"}]}},
    )
    engine = new_engine(spec)
    head = run(engine)
    assert head.status == "failed" and head.error_code == "CONTEXT_OVERFLOW", head.error_message
    assert len(_requests(engine)) == 1  # not retried with the very same prompt
    assert "nothing left to compact" in (head.error_message or "")
