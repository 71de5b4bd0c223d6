"""Gemini generateContent against a loopback server."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from runtime.errors import ModelError, TransientModelError
from runtime.messages import AssistantMessage, ToolResultMessage, UserMessage
from runtime.models.base import ModelRequest
from runtime.models.gemini import GeminiModel
from runtime.spec.models import GeminiModel as GeminiConfig
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

MODEL_ID = "gemini-2.5-flash"


def gemini(base_url: str, **extra: object) -> GeminiModel:
    config = GeminiConfig(
        provider="gemini", model_id=MODEL_ID, api_key="${secret:google}", base_url=base_url, **extra
    )
    return GeminiModel("gemini", config, Secrets())


def generated(parts: list[dict], finish: str = "STOP", usage: dict | None = None) -> dict:
    """A GenerateContentResponse as documented."""
    return {
        "candidates": [
            {"content": {"parts": parts, "role": "model"}, "finishReason": finish, "index": 0}
        ],
        "usageMetadata": usage
        or {"promptTokenCount": 20, "candidatesTokenCount": 8, "totalTokenCount": 28},
        "modelVersion": MODEL_ID,
        "responseId": "resp-1",
    }


TEXT_ANSWER = generated([{"text": "Sunny, 21C."}])


def test_request_on_the_wire(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    secrets = Secrets()
    config = GeminiConfig(
        provider="gemini",
        model_id=MODEL_ID,
        api_key="${secret:google}",
        base_url=f"{wire_server.url}/",
        temperature=0.3,
        max_tokens=800,
    )
    run(GeminiModel("gemini", config, secrets).request(conversation()))

    sent = wire_server.last
    assert secrets.asked == ["${secret:google}"]
    assert (sent.method, sent.path, sent.query) == (
        "POST",
        f"/v1beta/models/{MODEL_ID}:generateContent",
        {},
    )
    assert sent.headers["x-goog-api-key"] == KEY
    assert sent.headers["content-type"] == "application/json"
    assert sent.body == {
        "systemInstruction": {"parts": [{"text": SYSTEM}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather and time in Paris?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Checking both."},
                    {
                        "functionCall": {
                            "name": "get_weather",
                            "args": {"city": "Paris"},
                            "id": "call_1",
                        }
                    },
                    {
                        "functionCall": {
                            "name": "get_time",
                            "args": {"tz": "Europe/Paris"},
                            "id": "call_2",
                        }
                    },
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "get_weather",
                            "response": {"output": "18C, cloudy"},
                            "id": "call_1",
                        }
                    },
                    {
                        "functionResponse": {
                            "name": "get_time",
                            "response": {"error": "unknown time zone"},
                            "id": "call_2",
                        }
                    },
                ],
            },
        ],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Current weather for a city.",
                        "parametersJsonSchema": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                            "required": ["city"],
                        },
                    },
                    {
                        "name": "get_time",
                        "description": "Current time in a time zone.",
                        "parametersJsonSchema": {
                            "type": "object",
                            "properties": {"tz": {"type": "string"}},
                        },
                    },
                ]
            }
        ],
        "generationConfig": {"temperature": 0.3, "maxOutputTokens": 800},
    }


def test_unset_options_are_omitted_and_turns_merged(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    request = ModelRequest(
        system="",
        messages=[
            UserMessage(content="one"),
            UserMessage(content="two"),
            AssistantMessage(text="ok"),
            ToolResultMessage(tool_call_id="x", tool_name="f", content="r"),
            UserMessage(content="Please continue.", purpose="continue"),
        ],
    )
    run(gemini(wire_server.url).request(request))
    assert wire_server.last.body == {
        "contents": [
            {"role": "user", "parts": [{"text": "one"}, {"text": "two"}]},
            {"role": "model", "parts": [{"text": "ok"}]},
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "f",
                            "response": {"output": "r"},
                            "id": "x",
                        }
                    },
                    {"text": "Please continue."},
                ],
            },
        ]
    }


def test_default_base_url_through_an_injected_client() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=TEXT_ANSWER)

    config = GeminiConfig(provider="gemini", model_id=MODEL_ID, api_key="${secret:k}")

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            await GeminiModel("g", config, Secrets(), client=client).request(simple())

    run(go())
    assert (
        str(seen[0].url)
        == f"https://generativelanguage.googleapis.com/v1beta/models/{MODEL_ID}:generateContent"
    )
    assert KEY not in str(seen[0].url)  # the key travels in a header, never in the URL


def test_text_answer(wire_server: WireServer) -> None:
    wire_server.reply(
        generated([{"text": "thinking...", "thought": True}, {"text": "Sunny, "}, {"text": "21C."}])
    )
    answer = run(gemini(wire_server.url).request(simple()))
    assert answer.text == "Sunny, 21C."
    assert answer.tool_calls == []
    assert answer.stop_reason == "end_turn"
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (20, 8)
    assert answer.model_id == MODEL_ID


def test_function_call_answer(wire_server: WireServer) -> None:
    parts: list[dict[str, Any]] = [
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Oslo"}},
            "thoughtSignature": "c2ln",
        },
        {"functionCall": {"id": "fc-7", "name": "get_time", "args": {"tz": "UTC"}}},
        {"functionCall": {"name": "get_weather"}},
    ]
    usage = {
        "promptTokenCount": 50,
        "candidatesTokenCount": 9,
        "thoughtsTokenCount": 30,
        "totalTokenCount": 89,
    }
    wire_server.reply(generated(parts, usage=usage))
    answer = run(gemini(wire_server.url).request(conversation()))
    assert answer.text is None
    assert answer.stop_reason == "tool_use"
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [
        ("", "get_weather", {"city": "Oslo"}),  # no id from Gemini: the engine assigns one
        ("fc-7", "get_time", {"tz": "UTC"}),
        ("", "get_weather", {}),
    ]
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (50, 39)


@pytest.mark.parametrize(
    ("finish", "expected"),
    [("STOP", "end_turn"), ("MAX_TOKENS", "max_tokens"), ("SAFETY", "end_turn")],
)
def test_finish_reasons(wire_server: WireServer, finish: str, expected: str) -> None:
    wire_server.reply(generated([{"text": "partial"}], finish))
    assert run(gemini(wire_server.url).request(simple())).stop_reason == expected


def test_blocked_prompt_is_a_model_error(wire_server: WireServer) -> None:
    wire_server.reply(
        {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 5}}
    )
    with pytest.raises(ModelError, match="SAFETY"):
        run(gemini(wire_server.url).request(simple()))


def error(code: int, status: str, text: str) -> dict:
    return {"error": {"code": code, "message": text, "status": status}}


def test_429_is_transient_with_retry_after(wire_server: WireServer) -> None:
    wire_server.reply(
        error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
        status=429,
        headers={"Retry-After": "7"},
    )
    with pytest.raises(TransientModelError) as caught:
        run(gemini(wire_server.url).request(simple()))
    assert caught.value.retry_after == 7.0
    assert "RESOURCE_EXHAUSTED: Resource has been exhausted" in str(caught.value)
    assert KEY not in str(caught.value)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, [error(500, "INTERNAL", "An internal error has occurred.")]),  # sometimes a list
        (503, error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")),
    ],
)
def test_server_errors_are_transient(wire_server: WireServer, status: int, body: object) -> None:
    wire_server.reply(body, status=status)
    with pytest.raises(TransientModelError) as caught:
        run(gemini(wire_server.url).request(simple()))
    assert caught.value.status == status
    assert ("INTERNAL" if status == 500 else "UNAVAILABLE") in str(caught.value)


def test_400_is_not_transient_and_hides_the_key(wire_server: WireServer) -> None:
    wire_server.reply(
        error(400, "INVALID_ARGUMENT", f"API key not valid. Please pass a valid API key. ({KEY})"),
        status=400,
    )
    with pytest.raises(ModelError) as caught:
        run(gemini(wire_server.url).request(simple()))
    assert not isinstance(caught.value, TransientModelError)
    assert "INVALID_ARGUMENT: API key not valid" in str(caught.value)
    assert KEY not in str(caught.value)


def test_invalid_json_in_a_200_is_a_model_error(wire_server: WireServer) -> None:
    wire_server.reply("{candidates", status=200)
    with pytest.raises(ModelError, match="invalid JSON") as caught:
        run(gemini(wire_server.url).request(simple()))
    assert not isinstance(caught.value, TransientModelError)


def test_connection_refused_is_transient() -> None:
    with pytest.raises(TransientModelError):
        run(gemini(closed_port_url()).request(simple()))


def test_final_turn_sets_function_calling_mode_none(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    request = conversation()
    request.allow_tools = False
    run(gemini(wire_server.url).request(request))
    assert wire_server.last.body["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}


def test_thought_signatures_round_trip_on_function_calls(wire_server: WireServer) -> None:
    """Gemini 3 rejects a follow-up turn whose function call lost its thoughtSignature."""
    wire_server.reply(
        generated(
            [
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                    "thoughtSignature": "sig-abc",
                }
            ]
        )
    )
    model = gemini(wire_server.url)
    first = run(model.request(simple("Weather?")))
    assert first.tool_calls[0].provider_data == {"thoughtSignature": "sig-abc"}
    from runtime.messages import AssistantMessage, ToolResultMessage, UserMessage

    wire_server.reply(TEXT_ANSWER)
    follow_up = simple("Weather?")
    follow_up.messages = [
        UserMessage(content="Weather?"),
        AssistantMessage(tool_calls=first.tool_calls),
        ToolResultMessage(
            tool_call_id=first.tool_calls[0].id, tool_name="get_weather", content="18C"
        ),
    ]
    run(model.request(follow_up))
    sent = wire_server.last.body["contents"][1]["parts"][0]
    assert sent == {
        "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
        "thoughtSignature": "sig-abc",
    }
