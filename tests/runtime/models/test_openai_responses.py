"""OpenAI's Responses API (`api: responses`) replayed from recorded real traffic through a
loopback HTTP server: the answers (function call, text after a function_call_output,
reasoning then message, a 400), the real SSE streams (function call arguments in deltas,
text deltas, an `error` event mid-stream), and the request agentfn sends checked against the
request the real API accepted in the same exchange. Sources: the fixtures' README."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from runtime import structs
from runtime.errors import ModelError, TransientModelError
from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from runtime.models.base import ModelRequest, ToolSpec
from runtime.models.factory import build_model
from runtime.models.failures import QuotaExhausted
from runtime.models.openai_responses import OpenAIResponsesModel
from runtime.spec.models import AzureOpenAIModel, OpenAIModel
from tests.runtime.models.conversation import KEY, Secrets, conversation, run, simple
from tests.runtime.models.wire_server import WireServer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "provider_recordings" / "responses"
RECORDINGS = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in FIXTURES.glob("*.json")}


def _is_stream(recording: dict[str, Any]) -> bool:
    return isinstance(recording["response"]["body"], str)


ANSWERS = sorted(
    n for n, r in RECORDINGS.items() if r["response"]["status"] == 200 and not _is_stream(r)
)
STREAMS = sorted(n for n, r in RECORDINGS.items() if _is_stream(r) and "error" not in r["expect"])


def model(server: WireServer, **extra: Any) -> OpenAIResponsesModel:
    config = OpenAIModel(
        provider="openai",
        model_id=str(extra.pop("model_id", "gpt-4o")),
        api_key="${secret:openai_key}",
        base_url=f"{server.url}/v1",
        api="responses",
        **extra,
    )
    built = build_model("gpt", config, Secrets())
    assert isinstance(built, OpenAIResponsesModel)
    return built


def serve(server: WireServer, recording: dict[str, Any]) -> None:
    response = recording["response"]
    server.reply(response["body"], status=response["status"], headers=response["headers"])


def neutral(wire: dict[str, Any]) -> ModelRequest:
    """A recorded Responses request back as agentfn's neutral request."""
    messages: list[Message] = []
    names: dict[str, str] = {}
    for item in wire["input"]:
        kind = item.get("type")
        if kind == "function_call":
            call = ToolCall.from_json(item["call_id"], item["name"], item["arguments"])
            names[call.id] = call.name
            last = messages[-1] if messages else None
            if isinstance(last, AssistantMessage):
                messages[-1] = structs.replace(last, tool_calls=[*last.tool_calls, call])
            else:
                messages.append(AssistantMessage(text=None, tool_calls=[call]))
        elif kind == "function_call_output":
            messages.append(
                ToolResultMessage(
                    tool_call_id=item["call_id"],
                    tool_name=names[item["call_id"]],
                    content=item["output"],
                    success=True,
                )
            )
        elif item["role"] == "assistant":
            messages.append(AssistantMessage(text=item["content"] or None))
        else:
            messages.append(UserMessage(content=item["content"]))
    tools = [ToolSpec(t["name"], t["description"], t["parameters"]) for t in wire.get("tools", [])]
    return ModelRequest(system=wire.get("instructions") or "", messages=messages, tools=tools)


def shape(wire: dict[str, Any]) -> dict[str, Any]:
    """What both sides must agree on: the input items (an empty assistant message carries
    nothing), the tools, the instructions; not stream/strict/tool_choice flags."""
    items = [
        {k: v for k, v in item.items() if v is not None}  # a recorded `status: null`
        for item in wire["input"]
        if not (item.get("role") == "assistant" and not item["content"])
    ]
    tools = [{k: t[k] for k in ("type", "name", "parameters")} for t in wire.get("tools", [])]
    return {"input": items, "tools": tools, "instructions": wire.get("instructions") or None}


def view(answer: Any) -> dict[str, Any]:
    return {
        "text": answer.text,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in answer.tool_calls
        ],
        "stop_reason": answer.stop_reason,
        "usage": [answer.usage.input_tokens, answer.usage.output_tokens],
    }


@pytest.mark.parametrize("name", ANSWERS)
def test_recorded_responses_answers_parse_as_recorded(wire_server: WireServer, name: str) -> None:
    recording = RECORDINGS[name]
    serve(wire_server, recording)
    wire = recording["recorded_request"]
    request = neutral(wire) if wire else simple("hi")
    answer = run(model(wire_server).request(request))
    assert view(answer) == {k: recording["expect"][k] for k in view(answer)}
    sent = wire_server.last
    assert sent.path == "/v1/responses"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["store"] is False and "stream" not in sent.body
    if wire:  # the request the real API took in the same exchange, item for item
        assert shape(sent.body) == shape(wire)


@pytest.mark.parametrize("name", STREAMS)
def test_recorded_responses_streams_deliver_deltas_and_the_same_answer(
    wire_server: WireServer, name: str
) -> None:
    recording = RECORDINGS[name]
    serve(wire_server, recording)
    chunks: list[str] = []
    request = replace(neutral(recording["recorded_request"]), on_text=chunks.append)
    answer = run(model(wire_server).request(request))
    expect = recording["expect"]
    assert view(answer) == {k: expect[k] for k in view(answer)}
    assert "".join(chunks) == (expect["text"] or "")
    if expect["text"]:
        assert len(chunks) > 1  # the recorded deltas, not one block at the end
    assert wire_server.last.body["stream"] is True
    assert shape(wire_server.last.body) == shape(recording["recorded_request"])


def test_recorded_400_is_a_plain_error_naming_the_parameter(wire_server: WireServer) -> None:
    serve(wire_server, RECORDINGS["400_invalid_temperature"])
    with pytest.raises(ModelError) as caught:
        run(model(wire_server, temperature=1.0).request(simple()))
    assert not isinstance(caught.value, TransientModelError)
    assert caught.value.status == 400
    assert "decimal below minimum value" in str(caught.value)


def test_recorded_stream_error_event_ends_the_call_as_quota_exhausted(
    wire_server: WireServer,
) -> None:
    serve(wire_server, RECORDINGS["stream_error_insufficient_quota"])
    chunks: list[str] = []
    with pytest.raises(QuotaExhausted, match="exceeded your current quota"):
        run(model(wire_server).request(replace(simple(), on_text=chunks.append)))
    assert chunks == []


def test_request_carries_instructions_items_tools_and_max_output_tokens(
    wire_server: WireServer,
) -> None:
    """The shared conversation (text + two calls, an ok and a failed result) as Responses
    input items; max_tokens as max_output_tokens; the last turn withholds tools."""
    serve(wire_server, RECORDINGS["after_function_call_output"])
    request = replace(conversation(), allow_tools=False)
    run(model(wire_server, max_tokens=300, temperature=0.2).request(request))
    body = wire_server.last.body
    assert body["instructions"] == "You are a terse assistant."
    assert body["max_output_tokens"] == 300 and body["temperature"] == 0.2
    assert body["tool_choice"] == "none"
    assert [t["name"] for t in body["tools"]] == ["get_weather", "get_time"]
    assert body["input"] == [
        {"role": "user", "content": "Weather and time in Paris?"},
        {"role": "assistant", "content": "Checking both."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "get_time",
            "arguments": '{"tz":"Europe/Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "18C, cloudy"},
        {"type": "function_call_output", "call_id": "call_2", "output": "Error: unknown time zone"},
    ]


def test_incomplete_answer_cut_by_max_output_tokens_stops_on_max_tokens(
    wire_server: WireServer,
) -> None:
    """The documented shape of a cut answer (API reference, Response object: status
    `incomplete`, `incomplete_details.reason: max_output_tokens`), built on a recorded one."""
    body = json.loads(json.dumps(RECORDINGS["reasoning_then_message"]["response"]["body"]))
    body["status"] = "incomplete"
    body["incomplete_details"] = {"reason": "max_output_tokens"}
    wire_server.reply(body)
    answer = run(model(wire_server, max_tokens=163).request(simple()))
    assert answer.stop_reason == "max_tokens"


def test_azure_responses_posts_to_the_v1_route_with_the_deployment_as_model(
    wire_server: WireServer,
) -> None:
    config = AzureOpenAIModel(
        provider="azure_openai",
        model_id="gpt-4o",
        base_url=wire_server.url,
        deployment="gpt4o-prod",
        api_key="${secret:azure_key}",
        api="responses",
    )
    serve(wire_server, RECORDINGS["one_function_call"])
    answer = run(build_model("azure", config, Secrets()).request(simple()))
    sent = wire_server.last
    assert sent.path == "/openai/v1/responses"
    assert sent.headers["api-key"] == KEY and "authorization" not in sent.headers
    assert sent.body["model"] == "gpt4o-prod"
    assert answer.tool_calls[0].name == "get_capital"


def test_chat_completions_stays_the_default(wire_server: WireServer) -> None:
    config = OpenAIModel(provider="openai", model_id="gpt-4o", api_key="${secret:k}")
    assert config.api == "chat_completions"
    assert not isinstance(build_model("gpt", config, Secrets()), OpenAIResponsesModel)
