"""Each loop rule of DESIGN §5, proved on its own (scripted model, memory store)."""

from __future__ import annotations

import asyncio
import json

import pytest

from runtime.clock import FakeClock
from runtime.errors import TransientModelError
from runtime.messages import AssistantMessage, ToolResultMessage, UserMessage
from runtime.models.base import ModelRequest, ModelResponse
from runtime.structs import encode
from tests.runtime.engine.kit import CALLS, call, make_spec, new_engine, run


def _requests(engine):  # the scripted model records every request it answered
    return engine._model_cache["m"].requests


def test_simple_chat_is_a_single_model_call() -> None:
    engine = new_engine(make_spec([{"text": "Hi there."}], tools=[]))
    head = run(engine)
    assert head.status == "succeeded" and head.turn == 1
    assert len(_requests(engine)) == 1
    offered = [t.name for t in _requests(engine)[0].tools]
    assert offered == ["get_time_date", "list_tools_available", "agent_clarify"]
    result = engine.result(head.run_id)
    assert result["result"] == "Hi there." and result["tool_calls"] == []


def test_last_turn_withholds_tools_and_the_model_answers() -> None:
    script = [{"tool_calls": [call("echo", {"text": str(i)})]} for i in range(2)] + [
        {"text": "final"}
    ]
    engine = new_engine(make_spec(script, max_turns=3))
    head = run(engine)
    assert head.status == "succeeded" and head.turn == 3
    requests = _requests(engine)
    assert all(r.allow_tools for r in requests[:2])
    assert requests[2].allow_tools is False and "final turn" in requests[2].system


def test_tools_requested_on_the_final_turn_end_the_run_max_turns_exceeded() -> None:
    script = [{"tool_calls": [call("echo", {"text": str(i)})]} for i in range(5)]
    engine = new_engine(make_spec(script, max_turns=2))
    head = run(engine)
    assert head.status == "failed" and head.error_code == "MAX_TURNS_EXCEEDED"
    result = engine.result(head.run_id)
    assert result["turns_used"] == 2 and "max_turns (2)" in result["error_message"]
    assert [c[0] for c in CALLS] == ["echo"]  # the final turn's call never ran


def test_same_call_three_times_in_a_row_is_a_doom_loop() -> None:
    script = [{"tool_calls": [call("echo", {"text": "again"})]}] * 3 + [{"text": "never"}]
    engine = new_engine(make_spec(script))
    head = run(engine)
    assert head.status == "failed" and head.error_code == "DOOM_LOOP"
    assert len(CALLS) == 2  # the third identical call was not executed
    assert "echo" in engine.result(head.run_id)["error_message"]


def test_different_arguments_are_not_a_doom_loop() -> None:
    script = [{"tool_calls": [call("echo", {"text": t})]} for t in "aab"] + [{"text": "ok"}]
    head = run(new_engine(make_spec(script)))
    assert head.status == "succeeded"


def test_tool_errors_unknown_tools_and_bad_arguments_go_back_to_the_model() -> None:
    script = [
        {
            "tool_calls": [
                call("fail", {"reason": "no stock"}),
                call("teleport", {"to": "mars"}),
                {"name": "echo", "arguments": '{"text": "unterminated'},
                call("charge", {"amount": -5}),
                call("echo", {"wrong": 1}),
            ]
        },
        {"text": "I could not do those."},
    ]
    engine = new_engine(make_spec(script))
    head = run(engine)
    assert head.status == "succeeded"
    calls = engine.result(head.run_id)["tool_calls"]
    assert [c["success"] for c in calls] == [False] * 5
    outputs = [c["output"]["error"] for c in calls]
    assert "RuntimeError: cannot do that: no stock" in outputs[0]
    assert "unknown tool 'teleport'" in outputs[1] and "echo" in outputs[1]
    assert "invalid JSON" in outputs[2]
    assert "amount" in outputs[3] and "invalid arguments for charge" in outputs[3]
    assert "invalid arguments for echo" in outputs[4]
    assert [c[0] for c in CALLS] == ["fail"]  # nothing with bad arguments ran
    # The model saw every error as a tool result.
    second = _requests(engine)[1].messages
    results = [m for m in second if isinstance(m, ToolResultMessage)]
    assert len(results) == 5 and all(m.content.startswith("Error:") for m in results)


def test_slow_tools_time_out_as_errors() -> None:
    engine = new_engine(
        make_spec([{"tool_calls": [call("slow", {"seconds": 1.0})]}, {"text": "ok"}])
    )
    head = run(engine)
    record = engine.result(head.run_id)["tool_calls"][0]
    assert record["success"] is False and "timed out after 0.2s" in record["output"]["error"]


def test_large_outputs_are_capped_in_context_and_kept_whole_in_the_blob_store() -> None:
    spec = make_spec(
        [{"tool_calls": [call("big", {"size": 30_000}, id="call-1-1")]}, {"text": "ok"}],
        tool_result_max_chars=1000,
    )
    engine = new_engine(spec)
    head = run(engine)
    seen = next(m for m in _requests(engine)[1].messages if isinstance(m, ToolResultMessage))
    assert len(seen.content) < 1200 and "output truncated: 1000 of 30000" in seen.content
    assert seen.full_output_ref == f"tool-cache/a/{head.session_id}/{head.run_id}/call-1-1"
    assert len(engine.store.blobs.get(seen.full_output_ref)) == 30_000


class FlakyModel:
    """Fails transiently `failures` times with a Retry-After, then answers."""

    def __init__(self, name: str, failures: int, retry_after: float | None = 7.0, text: str = "ok"):
        self.name, self.model_id = name, f"{name}-id"
        self.failures, self.retry_after, self.text = failures, retry_after, text
        self.attempts = 0

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise TransientModelError("429 rate limited", status=429, retry_after=self.retry_after)
        return ModelResponse(text=self.text, model_id=self.model_id)


def test_transient_model_errors_are_retried_honoring_retry_after() -> None:
    spec = make_spec([{"text": "unused"}], tools=[])
    flaky = FlakyModel("m", failures=2)
    clock = FakeClock()
    head = run(new_engine(spec, clock=clock, models=lambda name: flaky))
    assert head.status == "succeeded" and flaky.attempts == 3
    assert clock.slept == [7.0, 7.0]  # Retry-After (7 s) beats the 1 s and 2 s backoff


def test_scripted_throttling_is_retried_then_the_next_entry_answers() -> None:
    script = [
        {"error": {"status": 429, "code": "ThrottlingException", "message": "slow down"}},
        {"text": "after retry"},
    ]
    clock = FakeClock()
    engine = new_engine(make_spec(script, tools=[]), clock=clock)
    head = run(engine)
    assert engine.result(head.run_id)["result"] == "after retry"
    assert clock.slept == [1.0]


def test_after_retries_the_fallback_answers_and_is_reported_as_model_used() -> None:
    spec = make_spec(
        [{"error": {"status": 400, "message": "bad request"}}],
        tools=[],
        fallbacks=["backup"],
        models={
            "backup": {
                "provider": "scripted",
                "model_id": "backup-v2",
                "script": [{"text": "from backup"}],
            }
        },
    )
    engine = new_engine(spec)
    head = run(engine)
    result = engine.result(head.run_id)
    assert result["status"] == "succeeded" and result["result"] == "from backup"
    assert result["model_used"] == "backup-v2"
    assert len(_requests(engine)) == 1  # a 400 is not retried on the same model


def test_when_every_model_fails_the_run_fails_with_model_error() -> None:
    spec = make_spec([{"error": {"status": 500, "message": "boom"}}] * 4, tools=[])
    clock = FakeClock()
    head = run(new_engine(spec, clock=clock))
    assert head.status == "failed" and head.error_code == "MODEL_ERROR"
    assert len(clock.slept) == 3  # 4 attempts, 3 backoffs
    assert "boom" in (head.error_message or "")


def test_an_answer_cut_by_the_token_limit_is_continued_up_to_three_times() -> None:
    script = [
        {"text": "Part one, ", "stop_reason": "max_tokens"},
        {"text": "part two, ", "stop_reason": "max_tokens"},
        {"text": "part three.", "stop_reason": "end_turn"},
    ]
    engine = new_engine(make_spec(script, tools=[]))
    head = run(engine)
    assert engine.result(head.run_id)["result"] == "Part one, part two, part three."
    assert head.turn == 1  # continuations are not new turns
    asks = [
        m
        for m in _requests(engine)[2].messages
        if isinstance(m, UserMessage) and m.purpose == "continue"
    ]
    assert len(asks) == 2


def test_continuation_stops_after_three_times() -> None:
    script = [{"text": f"p{i} ", "stop_reason": "max_tokens"} for i in range(5)]
    engine = new_engine(make_spec(script, tools=[]))
    head = run(engine)
    assert head.status == "succeeded"
    assert engine.result(head.run_id)["result"] == "p0 p1 p2 p3 "
    assert len(_requests(engine)) == 4


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def test_structured_output_in_code_fences_is_parsed_and_validated() -> None:
    engine = new_engine(
        make_spec([{"text": '```json\n{"n": 3}\n```'}], tools=[], output_schema=SCHEMA)
    )
    head = run(engine)
    assert engine.result(head.run_id)["result"] == {"n": 3}


def test_invalid_structured_output_is_corrected_then_accepted() -> None:
    script = [{"text": "n is three"}, {"text": '{"n": "three"}'}, {"text": '{"n": 3}'}]
    engine = new_engine(make_spec(script, tools=[], output_schema=SCHEMA))
    head = run(engine)
    assert head.status == "succeeded" and engine.result(head.run_id)["result"] == {"n": 3}
    corrections = [
        m.content
        for m in _requests(engine)[2].messages
        if isinstance(m, UserMessage) and m.purpose == "correct"
    ]
    assert len(corrections) == 2
    assert "not a JSON object" in corrections[0] and "n: must be integer" in corrections[1]


def test_structured_output_still_invalid_after_two_corrections_fails() -> None:
    script = [{"text": "nope"}] * 3
    head = run(new_engine(make_spec(script, tools=[], output_schema=SCHEMA)))
    assert head.status == "failed" and head.error_code == "OUTPUT_INVALID"


def test_json_answers_without_a_schema_become_objects_and_prose_stays_text() -> None:
    engine = new_engine(make_spec([{"text": '{"a": 1}'}], tools=[]))
    assert engine.result(run(engine).run_id)["result"] == {"a": 1}
    engine = new_engine(make_spec([{"text": "{not json"}], tools=[]))
    assert engine.result(run(engine).run_id)["result"] == "{not json"


def test_tokens_reasoning_and_tool_call_records_accumulate_across_turns() -> None:
    script = [
        {
            "text": "Look it up.",
            "tool_calls": [call("echo", {"text": "x"})],
            "usage": {"input_tokens": 100, "output_tokens": 10},
        },
        {
            "text": "Now async.",
            "tool_calls": [call("aecho", {"text": "y", "times": 2})],
            "usage": {"input_tokens": 150, "output_tokens": 20},
        },
        {"text": "Done.", "usage": {"input_tokens": 200, "output_tokens": 5}},
    ]
    engine = new_engine(make_spec(script))
    result = engine.result(run(engine).run_id)
    assert (result["tokens_input"], result["tokens_output"]) == (450, 35)
    assert result["reasoning"] == "Turn 1: Look it up.\nTurn 2: Now async."
    assert [
        (c["turn_number"], c["tool_name"], c["inputs"], c["output"], c["success"])
        for c in result["tool_calls"]
    ] == [
        (1, "echo", {"text": "x"}, "echo: x", True),
        (2, "aecho", {"text": "y", "times": 2}, {"echo": "yy"}, True),
    ]
    assert all(isinstance(c["duration_ms"], int) for c in result["tool_calls"])
    assert result["turns_used"] == 3 and result["model_used"] == "scripted"


def test_system_prompt_variables_are_filled_in() -> None:
    spec = make_spec(
        [{"text": "ok"}],
        tools=[],
        system_prompt="I am {agent} ({description}) on {date}, a {weekday}; run {run_id}. {{literal}}",
    )
    clock = FakeClock(start=1_790_000_000.0, tick=0)  # 2026-09-21, a Monday
    engine = new_engine(spec, clock=clock)
    head = run(engine)
    system = _requests(engine)[0].system
    assert system == f"I am a (test agent) on 2026-09-21, a Monday; run {head.run_id}. {{literal}}"


def test_builtin_time_and_tool_listing() -> None:
    script = [
        {
            "tool_calls": [
                call("get_time_date", {"timezone": "Europe/Paris"}),
                call("list_tools_available"),
            ]
        },
        {"text": "ok"},
    ]
    spec = make_spec(
        script, tools=["echo", "builtin:get_time_date", "builtin:list_tools_available"]
    )
    engine = new_engine(spec)
    calls = engine.result(run(engine).run_id)["tool_calls"]
    assert calls[0]["success"] and calls[0]["output"]["timezone"] == "Europe/Paris"
    names = [t["name"] for t in calls[1]["output"]]
    assert names == [
        "echo",
        "get_time_date",
        "list_tools_available",
        "session_cache_list",
        "session_cache_get",
        "agent_clarify",
    ]


def test_python_tool_schema_comes_from_type_hints_when_not_given() -> None:
    engine = new_engine(make_spec([{"text": "ok"}], tools=["aecho"]))
    run(engine)
    offered = {t.name: t for t in _requests(engine)[0].tools}
    schema = offered["aecho"].input_schema
    assert schema["properties"] == {"text": {"type": "string"}, "times": {"type": "integer"}}
    assert schema["required"] == ["text"]


def test_clarification_pauses_and_the_reply_becomes_that_calls_result() -> None:
    script = [
        {
            "tool_calls": [
                call("agent_clarify", {"question": "Which order?", "reason": "two open"}, id="q-1")
            ]
        },
        {"text": "Thanks, looking at ORD-9."},
    ]
    engine = new_engine(make_spec(script))
    head = run(engine)
    assert head.status == "awaiting_input"
    paused = engine.result(head.run_id)
    clock = engine.clock
    assert paused["clarification"] == {
        "question": "Which order?",
        "reason": "two open",
        "tool_call_id": "q-1",
        "expires_at": pytest.approx(clock.now() + 86_400, abs=5),  # defaults.input_timeout
    }
    engine.reply(head.run_id, "ORD-9")
    head = asyncio.run(engine.advance(head.run_id))
    assert head.status == "succeeded"
    messages = _requests(engine)[1].messages
    assert isinstance(messages[-1], ToolResultMessage) and messages[-1].content == "ORD-9"
    assert messages[-1].tool_call_id == "q-1"
    assert sum(isinstance(m, UserMessage) for m in messages) == 1  # the reply is not a user message


def test_a_later_run_of_the_session_sees_the_question_answered() -> None:
    script = [
        {"tool_calls": [call("agent_clarify", {"question": "Which order?"})]},
        {"text": "ORD-9 is on its way."},
    ]
    engine = new_engine(make_spec(script))
    first = run(engine, "where is my order?")
    engine.reply(first.run_id, "ORD-9")
    asyncio.run(engine.advance(first.run_id))
    # Entry 0 answers the new run's first call again; what matters is what the model saw.
    second = asyncio.run(engine.run("a", "the same one as before?", first.session_id))
    assert second.session_id == first.session_id
    seen = _requests(engine)[-1].messages
    kinds = [type(m).__name__ for m in seen]
    assert kinds == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
        "UserMessage",
    ]
    assert seen[2].content == "ORD-9" and seen[-1].content == "the same one as before?"


def test_runs_without_a_session_get_their_own() -> None:
    engine = new_engine(make_spec([{"text": "a"}, {"text": "b"}], tools=[]))
    one, two = run(engine), run(engine)
    assert one.session_id != two.session_id
    assert len(_requests(engine)[-1].messages) == 1


def test_failed_runs_are_left_out_of_session_history() -> None:
    script = [{"error": {"status": 400, "message": "no"}}]
    spec = make_spec(
        script, tools=[], models={"ok": {"provider": "scripted", "script": [{"text": "fine"}]}}
    )
    engine = new_engine(spec)
    failed = run(engine, "first")
    assert failed.status == "failed"
    data = spec.model_dump(mode="json", by_alias=True)
    data["agents"]["a"]["model"] = "ok"
    from runtime.spec import AgentfnSpec

    engine2 = new_engine(AgentfnSpec.model_validate(data), store=engine.store)
    second = asyncio.run(engine2.run("a", "second", failed.session_id))
    assert second.status == "succeeded"
    assert [m.content for m in engine2._model_cache["ok"].requests[0].messages] == ["second"]


def test_events_are_numbered_and_tell_the_whole_story() -> None:
    script = [{"tool_calls": [call("echo", {"text": "x"})]}, {"text": "done"}]
    engine = new_engine(make_spec(script))
    head = run(engine)
    events = engine.store.list_events(head.run_id)
    assert [e.seq for e in events] == list(range(len(events)))
    assert [e.type for e in events] == [
        "run_started",
        "step_started",
        "model_response",
        "tool_call",
        "tool_result",
        "step_completed",
        "step_started",
        "model_response",
        "step_completed",
        "run_completed",
    ]
    assert [e.seq for e in engine.store.list_events(head.run_id, after=7)] == [8, 9]


def test_the_last_answer_is_persisted_with_the_model_that_gave_it() -> None:
    engine = new_engine(make_spec([{"text": "fine"}], tools=[]))
    head = run(engine)
    messages = engine.store.load_messages(head)
    assert isinstance(messages[-1], AssistantMessage) and messages[-1].model == "m"
    assert json.loads(encode(messages[-1]))["turn"] == 1


def test_an_answer_still_cut_off_after_three_continuations_is_marked_truncated() -> None:
    """Issue 22, point 10: the answer is returned (what there is of it is the best there
    is), but the result and the run_completed event say it was cut off."""
    script = [{"text": f"p{i} ", "stop_reason": "max_tokens"} for i in range(5)]
    engine = new_engine(make_spec(script, tools=[]))
    head = run(engine)
    result = engine.result(head.run_id)
    assert result["status"] == "succeeded" and result["truncated"] is True
    assert any("cut off" in w for w in result["warnings"])
    (done,) = [e.data for e in engine.store.list_events(head.run_id) if e.type == "run_completed"]
    assert done["truncated"] is True
    whole = new_engine(make_spec([{"text": "all of it"}], tools=[]))
    finished = run(whole)
    assert "truncated" not in whole.result(finished.run_id)
    (done,) = [
        e.data for e in whole.store.list_events(finished.run_id) if e.type == "run_completed"
    ]
    assert "truncated" not in done


def test_a_tool_output_cut_in_the_result_says_so_and_where_the_whole_is() -> None:
    """Issue 22, point 10: an output over 8 KB is shown as its first 2,000 characters in the
    result contract; the record says so, with the full length and the cache id that reads it
    whole (session_cache_get), and so does the tool_result event."""
    script = [
        {
            "tool_calls": [
                call("big", {"size": 9_000}, id="b1"),
                call("big", {"size": 100}, id="b2"),
            ]
        },
        {"text": "done"},
    ]
    engine = new_engine(make_spec(script, tools=["big"], tool_result_max_chars=20_000))
    head = run(engine)
    records = {r["tool_call_id"]: r for r in engine.result(head.run_id)["tool_calls"]}
    cut, whole = records["b1"], records["b2"]
    assert len(cut["output"]) == 2000
    assert cut["output_truncated"] is True and cut["output_chars"] == 9_000
    assert cut["full_output"]["cache_id"] == "b1"
    stored = engine.store.blobs.get(cut["full_output"]["key"])
    assert len(stored.decode()) == 9_000  # the whole output is kept where the record says
    assert "output_truncated" not in whole and len(whole["output"]) == 100
    events = [e.data for e in engine.store.list_events(head.run_id) if e.type == "tool_result"]
    assert [e.get("output_truncated", False) for e in events] == [True, False]
