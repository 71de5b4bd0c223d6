"""Anthropic Messages API against a loopback server."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from runtime.errors import ModelError, TransientModelError
from runtime.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from runtime.models.anthropic import AnthropicMessagesModel
from runtime.models.base import ModelRequest
from runtime.spec.models import AnthropicModel
from tests.runtime.models.conversation import (
    KEY,
    SYSTEM,
    Secrets,
    closed_port_url,
    conversation,
    run,
    simple,
)
from tests.runtime.models.wire_server import WireServer

MODEL_ID = "claude-sonnet-4-20250514"


def claude(base_url: str, **extra: object) -> AnthropicMessagesModel:
    config = AnthropicModel(
        provider="anthropic",
        model_id=MODEL_ID,
        api_key="${secret:anthropic}",
        base_url=base_url,
        **extra,
    )
    return AnthropicMessagesModel("claude", config, Secrets())


def message(content: list[dict], stop_reason: str = "end_turn") -> dict:
    """A Messages API response as documented."""
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": MODEL_ID,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 12},
    }


TEXT_ANSWER = message([{"type": "text", "text": "Sunny, 21C."}])


def test_request_on_the_wire(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    secrets = Secrets()
    config = AnthropicModel(
        provider="anthropic",
        model_id=MODEL_ID,
        api_key="${secret:anthropic}",
        base_url=f"{wire_server.url}/",
        temperature=0.5,
        max_tokens=1024,
    )
    run(AnthropicMessagesModel("claude", config, secrets).request(conversation()))

    sent = wire_server.last
    assert secrets.asked == ["${secret:anthropic}"]
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    assert "authorization" not in sent.headers
    assert sent.body == {
        "model": MODEL_ID,
        "max_tokens": 1024,
        "system": SYSTEM,
        "temperature": 0.5,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather and time in Paris?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking both."},
                    {
                        "type": "tool_use",
                        "id": "call_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "call_2",
                        "name": "get_time",
                        "input": {"tz": "Europe/Paris"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_1",
                        "content": "18C, cloudy",
                        "is_error": False,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_2",
                        "content": "unknown time zone",
                        "is_error": True,
                    },
                ],
            },
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "input_schema": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
            {
                "name": "get_time",
                "description": "Current time in a time zone.",
                "input_schema": {"type": "object", "properties": {"tz": {"type": "string"}}},
            },
        ],
    }


def test_max_tokens_defaults_and_unset_options_are_omitted(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    run(
        claude(wire_server.url).request(
            ModelRequest(system="", messages=[UserMessage(content="hi")])
        )
    )
    assert wire_server.last.body == {
        "model": MODEL_ID,
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }


def test_same_role_messages_are_merged(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    broken = ToolCall.from_json("toolu_9", "get_weather", '{"city": ')
    request = ModelRequest(
        system=SYSTEM,
        messages=[
            UserMessage(content="one"),
            UserMessage(content="two"),
            AssistantMessage(text=None, tool_calls=[broken]),
            ToolResultMessage(
                tool_call_id="toolu_9", tool_name="get_weather", content="bad", success=False
            ),
            UserMessage(content="Please continue.", purpose="continue"),
            AssistantMessage(text=None),  # nothing to send: dropped
            UserMessage(content="three"),
        ],
    )
    run(claude(wire_server.url).request(request))
    assert wire_server.last.body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_9",
                    "content": "bad",
                    "is_error": True,
                },
                {"type": "text", "text": "Please continue."},
                {"type": "text", "text": "three"},
            ],
        },
    ]


def test_default_base_url_through_an_injected_client() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=TEXT_ANSWER)

    config = AnthropicModel(provider="anthropic", model_id=MODEL_ID, api_key="${secret:k}")

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            await AnthropicMessagesModel("c", config, Secrets(), client=client).request(simple())

    run(go())
    assert str(seen[0].url) == "https://api.anthropic.com/v1/messages"


def test_text_answer(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    answer = run(claude(wire_server.url).request(simple()))
    assert answer.text == "Sunny, 21C."
    assert answer.tool_calls == []
    assert answer.stop_reason == "end_turn"
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (25, 12)
    assert answer.model_id == MODEL_ID


def test_tool_use_answer(wire_server: WireServer) -> None:
    content: list[dict[str, Any]] = [
        {"type": "text", "text": "Let me check both."},
        {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Oslo"}},
        {"type": "tool_use", "id": "toolu_01B", "name": "get_time", "input": {}},
    ]
    wire_server.reply(message(content, "tool_use"))
    answer = run(claude(wire_server.url).request(conversation()))
    assert answer.text == "Let me check both."
    assert answer.stop_reason == "tool_use"
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [
        ("toolu_01A", "get_weather", {"city": "Oslo"}),
        ("toolu_01B", "get_time", {}),
    ]


@pytest.mark.parametrize(
    ("wire", "expected"),
    [("end_turn", "end_turn"), ("stop_sequence", "end_turn"), ("max_tokens", "max_tokens")],
)
def test_stop_reasons(wire_server: WireServer, wire: str, expected: str) -> None:
    wire_server.reply(message([{"type": "text", "text": "partial"}], wire))
    assert run(claude(wire_server.url).request(simple())).stop_reason == expected


def error(kind: str, text: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": text}}


def test_429_is_transient_with_retry_after(wire_server: WireServer) -> None:
    wire_server.reply(
        error("rate_limit_error", "Number of request tokens has exceeded your rate limit"),
        status=429,
        headers={"retry-after": "7"},
    )
    with pytest.raises(TransientModelError) as caught:
        run(claude(wire_server.url).request(simple()))
    assert caught.value.retry_after == 7.0
    assert "rate_limit_error" in str(caught.value)
    assert KEY not in str(caught.value)


@pytest.mark.parametrize(
    ("status", "kind", "text"),
    [
        (529, "overloaded_error", "Overloaded"),
        (500, "api_error", "Internal server error"),
        (503, "api_error", "Service unavailable"),
    ],
)
def test_overloaded_and_server_errors_are_transient(
    wire_server: WireServer, status: int, kind: str, text: str
) -> None:
    wire_server.reply(error(kind, text), status=status)
    with pytest.raises(TransientModelError) as caught:
        run(claude(wire_server.url).request(simple()))
    assert caught.value.status == status
    assert f"{kind}: {text}" in str(caught.value)


@pytest.mark.parametrize(
    ("status", "kind"), [(400, "invalid_request_error"), (401, "authentication_error")]
)
def test_client_errors_are_not_transient_and_hide_the_key(
    wire_server: WireServer, status: int, kind: str
) -> None:
    wire_server.reply(error(kind, f"invalid x-api-key {KEY}"), status=status)
    with pytest.raises(ModelError) as caught:
        run(claude(wire_server.url).request(simple()))
    assert not isinstance(caught.value, TransientModelError)
    assert f"{kind}: invalid x-api-key" in str(caught.value)
    assert KEY not in str(caught.value)


def test_invalid_json_in_a_200_is_a_model_error(wire_server: WireServer) -> None:
    wire_server.reply('{"type": "message", ', status=200)
    with pytest.raises(ModelError, match="invalid JSON") as caught:
        run(claude(wire_server.url).request(simple()))
    assert not isinstance(caught.value, TransientModelError)


def test_connection_refused_is_transient() -> None:
    with pytest.raises(TransientModelError):
        run(claude(closed_port_url()).request(simple()))


def test_final_turn_sets_tool_choice_none(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    request = conversation()
    request.allow_tools = False
    run(claude(wire_server.url).request(request))
    assert wire_server.last.body["tool_choice"] == {"type": "none"}
    assert wire_server.last.body["tools"]
