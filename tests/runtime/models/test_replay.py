"""Recorded real provider traffic, replayed through each provider adapter's own request
building and response parsing (see recordings.py). One test per recording file, so a new
recording is picked up by dropping it in tests/fixtures/provider_recordings/ (and naming
its source in the README there).

- every recording: the answer means what `expect` says (text, tool calls with their ids
  and signatures, stop reason, usage; or the error class and its Retry-After);
- a recording with the request the real API took: the request agentfn builds for the same
  conversation has its shape (roles and order, blocks, tool result shape, ids, signatures,
  tool schemas, limits). Only 2xx exchanges count: a rejected request proves nothing;
- an answer with tool calls: the follow-up turn echoes the call ids and signatures, and
  the results come right after the calls, in order; where the exchange's next request was
  recorded too, the turn agentfn rebuilds from the parsed answer is the one the API took.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from runtime.errors import ModelError, TransientModelError
from runtime.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from runtime.models.base import ModelRequest, ModelResponse, ToolSpec
from runtime.models.failures import QuotaExhausted, ToolsUnsupported
from runtime.structs import replace
from tests.runtime.models.recordings import (
    FIXTURES,
    Recording,
    Replay,
    all_recordings,
    neutral_request,
    next_interaction,
    shape,
)

RECORDINGS = all_recordings()
#: The 27 recordings the issue started from; more may be added, none may go missing.
ORIGINAL = {
    "anthropic": 9,
    "bedrock": 6,
    "gemini": 5,
    "ollama": 1,
    "openai": 4,
    "openai_compatible": 2,
}


@pytest.fixture(autouse=True)
def offline_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Credentials for signing only: the Bedrock replay answers before anything is sent."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    yield


def default_request() -> ModelRequest:
    return ModelRequest(system="You are helpful.", messages=[UserMessage(content="Hello")])


def replay(recording: Recording) -> tuple[Replay, ModelRequest]:
    """The replay and the request to send: the recorded one, in agentfn's terms, or a
    plain question when the recording has no request."""
    if recording.recorded_request:
        neutral = neutral_request(recording.provider, recording.recorded_request)
        return Replay(recording, neutral.config), neutral.request
    return Replay(recording), default_request()


def test_every_recording_is_here_with_its_provenance() -> None:
    counts: dict[str, int] = {}
    for recording in RECORDINGS:
        counts[recording.provider] = counts.get(recording.provider, 0) + 1
    assert all(counts.get(p, 0) >= n for p, n in ORIGINAL.items()), counts
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert [r.name for r in RECORDINGS if f"{r.name}.json" not in readme] == []


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.name)
def test_the_answer_means_what_was_recorded(recording: Recording) -> None:
    player, request = replay(recording)
    model = player.model()
    expect = recording.expect
    if "error" in expect:
        with pytest.raises(ModelError) as raised:
            player.ask(model, request)
        error = raised.value
        assert not isinstance(error, QuotaExhausted | ToolsUnsupported), error
        if expect["error"] == "transient":
            assert isinstance(error, TransientModelError), error
            assert error.retry_after == expect["retry_after"]
        else:
            assert not isinstance(error, TransientModelError), error
        assert len(player.sent) == 1  # no retry inside the adapter (nor inside botocore)
        return
    answer = player.ask(model, request)
    assert len(player.sent) == 1
    assert answer.text == expect["text"]
    assert [call_view(c) for c in answer.tool_calls] == [
        {
            "id": c["id"] or "",
            "name": c["name"],
            "arguments": c["arguments"],
            "thoughtSignature": c.get("thoughtSignature"),
        }
        for c in expect["tool_calls"]
    ]
    assert answer.stop_reason == expect["stop_reason"]
    assert [answer.usage.input_tokens, answer.usage.output_tokens] == expect["usage"]


def call_view(call: ToolCall) -> dict[str, object]:
    return {
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "thoughtSignature": (call.provider_data or {}).get("thoughtSignature"),
    }


ACCEPTED_REQUESTS = [r for r in RECORDINGS if r.recorded_request and r.status == 200]


@pytest.mark.parametrize("recording", ACCEPTED_REQUESTS, ids=lambda r: r.name)
def test_agentfn_builds_the_request_the_real_api_took(recording: Recording) -> None:
    player, request = replay(recording)
    player.ask(player.model(), request)
    assert recording.recorded_request is not None
    ours = shape(recording.provider, player.sent[0])
    theirs = shape(recording.provider, recording.recorded_request)
    assert ours == theirs


WITH_TOOL_CALLS = [r for r in RECORDINGS if r.status == 200 and r.expect.get("tool_calls")]


def follow_up(request: ModelRequest, answer: ModelResponse) -> tuple[ModelRequest, list[ToolCall]]:
    """The next turn as the engine builds it: the answer (calls without an id get one, as
    the engine's own_call_ids does), then one result per call, in order."""
    calls = [c if c.id else replace(c, id=f"call_{i}") for i, c in enumerate(answer.tool_calls)]
    results = [
        ToolResultMessage(tool_call_id=c.id, tool_name=c.name, content=f"result {i}")
        for i, c in enumerate(calls)
    ]
    tools = request.tools or [ToolSpec(c.name, "", {"type": "object"}) for c in calls]
    history = [*request.messages, AssistantMessage(text=answer.text, tool_calls=calls), *results]
    return ModelRequest(system=request.system, messages=history, tools=tools), calls


@pytest.mark.parametrize("recording", WITH_TOOL_CALLS, ids=lambda r: r.name)
def test_the_follow_up_turn_echoes_the_calls_and_answers_them_in_order(
    recording: Recording,
) -> None:
    player, request = replay(recording)
    model = player.model()
    answer = player.ask(model, request)
    next_request, calls = follow_up(request, answer)
    player.ask(model, next_request)
    echoed, answered = calls_and_results(recording.provider, player.sent[-1])
    assert echoed == [
        (c.id, c.name, c.arguments, (c.provider_data or {}).get("thoughtSignature")) for c in calls
    ]
    assert answered == [c.id for c in calls]


def calls_and_results(provider: str, wire: dict) -> tuple[list[tuple], list[str]]:
    """The last assistant turn's calls (id, name, arguments, signature) and the ids the
    turn right after it answers, from a request on the wire."""
    if provider == "anthropic":
        turn, after = wire["messages"][-2:]
        assert (turn["role"], after["role"]) == ("assistant", "user")
        calls = [
            (b["id"], b["name"], b["input"], None)
            for b in turn["content"]
            if b["type"] == "tool_use"
        ]
        return calls, [b["tool_use_id"] for b in after["content"] if b["type"] == "tool_result"]
    if provider == "bedrock":
        turn, after = wire["messages"][-2:]
        assert (turn["role"], after["role"]) == ("assistant", "user")
        uses = [b["toolUse"] for b in turn["content"] if "toolUse" in b]
        calls = [(u["toolUseId"], u["name"], u["input"], None) for u in uses]
        return calls, [b["toolResult"]["toolUseId"] for b in after["content"] if "toolResult" in b]
    if provider == "gemini":
        turn, after = wire["contents"][-2:]
        assert (turn["role"], after["role"]) == ("model", "user")
        calls = [
            (
                p["functionCall"]["id"],
                p["functionCall"]["name"],
                p["functionCall"]["args"],
                p.get("thoughtSignature"),
            )
            for p in turn["parts"]
            if "functionCall" in p
        ]
        return calls, [p["functionResponse"]["id"] for p in after["parts"]]
    import json

    last = max(i for i, m in enumerate(wire["messages"]) if m["role"] == "assistant")
    turn, after = wire["messages"][last], wire["messages"][last + 1 :]
    calls = [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]), None)
        for c in turn["tool_calls"]
    ]
    assert all(m["role"] == "tool" for m in after)
    return calls, [m["tool_call_id"] for m in after]


PAIRS = [(r, n) for r in WITH_TOOL_CALLS if (n := next_interaction(r, RECORDINGS))]


@pytest.mark.parametrize(("recording", "later"), PAIRS, ids=lambda r: r.name)
def test_the_turn_rebuilt_from_the_parsed_answer_is_the_one_the_api_took(
    recording: Recording, later: Recording
) -> None:
    player, request = replay(recording)
    answer = player.ask(player.model(), request)
    assert later.recorded_request is not None
    took = neutral_request(later.provider, later.recorded_request).request.messages
    position = len(request.messages)
    assert took[:position] == request.messages
    assert took[position] == AssistantMessage(text=answer.text, tool_calls=answer.tool_calls)


def test_pairs_are_found() -> None:
    """The exchanges recorded over two calls are checked end to end above."""
    assert {(a.name, b.name) for a, b in PAIRS} >= {
        ("anthropic__parallel_tool_calls", "anthropic__after_parallel_tool_results"),
        ("openai__one_tool_call", "openai__tool_result_turn"),
    }
