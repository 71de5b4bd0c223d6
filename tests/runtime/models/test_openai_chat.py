"""OpenAI Chat Completions (and Azure, Ollama, OpenAI-compatible) against a loopback server."""

from __future__ import annotations

import json

import httpx
import pytest

from runtime.errors import ModelError, TransientModelError
from runtime.messages import AssistantMessage, ToolCall, UserMessage
from runtime.models.base import ModelRequest
from runtime.models.openai_chat import OpenAIChatModel
from runtime.spec.models import (
    AzureOpenAIModel,
    OllamaModel,
    OpenAICompatibleModel,
    OpenAIModel,
)
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


def openai(server_url: str, **extra: object) -> OpenAIChatModel:
    config = OpenAIModel(
        provider="openai",
        model_id="gpt-4.1",
        api_key="${secret:openai_key}",
        base_url=f"{server_url}/v1",
        **extra,
    ).to_runtime()
    return OpenAIChatModel("gpt", config, Secrets())


def completion(message: dict, finish_reason: str = "stop", usage: dict | None = None) -> dict:
    """A chat.completion object as the API documents it."""
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1_741_569_952,
        "model": "gpt-4.1-2025-04-14",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "refusal": None, **message},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": usage or {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29},
    }


TEXT_ANSWER = completion({"content": "Sunny, 21C."})


def test_openai_request_on_the_wire(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    secrets = Secrets()
    config = OpenAIModel(
        provider="openai",
        model_id="gpt-4.1",
        api_key="${secret:openai_key}",
        base_url=f"{wire_server.url}/v1/",
        organization="org-42",
        temperature=0.2,
        max_tokens=512,
    ).to_runtime()
    run(OpenAIChatModel("gpt", config, secrets).request(conversation()))

    sent = wire_server.last
    assert secrets.asked == ["${secret:openai_key}"]
    assert (sent.method, sent.path, sent.query) == ("POST", "/v1/chat/completions", {})
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["openai-organization"] == "org-42"
    assert sent.headers["content-type"] == "application/json"
    assert sent.body == {
        "model": "gpt-4.1",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Weather and time in Paris?"},
            {
                "role": "assistant",
                "content": "Checking both.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": '{"tz":"Europe/Paris"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18C, cloudy"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: unknown time zone"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "get_time",
                    "description": "Current time in a time zone.",
                    "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
                },
            },
        ],
        "temperature": 0.2,
        "max_completion_tokens": 512,
    }


def test_unset_options_and_empty_tools_are_omitted(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    run(openai(wire_server.url).request(conversation(tools=False)))
    body = wire_server.last.body
    assert set(body) == {"model", "messages"}
    assert "openai-organization" not in wire_server.last.headers


def test_tool_calls_sent_back_raw_and_without_text(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    broken = ToolCall.from_json("call_9", "get_weather", '{"city": ')
    request = ModelRequest(
        system="",
        messages=[UserMessage(content="go"), AssistantMessage(text=None, tool_calls=[broken])],
    )
    run(openai(wire_server.url).request(request))
    assert wire_server.last.body["messages"] == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": '},
                }
            ],
        },
    ]


def test_azure_url_key_header_and_api_version(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    config = AzureOpenAIModel(
        provider="azure_openai",
        model_id="gpt-4o",
        base_url=wire_server.url,
        deployment="prod-gpt4o",
        api_version="2024-10-21",
        api_key="${secret:azure_key}",
        max_tokens=100,
    ).to_runtime()
    answer = run(OpenAIChatModel("azure", config, Secrets()).request(simple()))
    sent = wire_server.last
    assert sent.path == "/openai/deployments/prod-gpt4o/chat/completions"
    assert sent.query == {"api-version": ["2024-10-21"]}
    assert sent.headers["api-key"] == KEY
    assert "authorization" not in sent.headers
    assert sent.body["max_tokens"] == 100
    assert "max_completion_tokens" not in sent.body
    assert answer.model_id == "gpt-4o"


def test_ollama_without_a_key_sends_no_authorization(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    secrets = Secrets()
    config = OllamaModel(
        provider="ollama", model_id="qwen3", base_url=f"{wire_server.url}/v1", max_tokens=64
    ).to_runtime()
    run(OpenAIChatModel("local", config, secrets).request(simple()))
    sent = wire_server.last
    assert sent.path == "/v1/chat/completions"
    assert "authorization" not in sent.headers
    assert secrets.asked == []
    assert sent.body["model"] == "qwen3"
    assert sent.body["max_tokens"] == 64


def test_openai_compatible_with_a_key_uses_bearer(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    config = OpenAICompatibleModel(
        provider="openai_compatible",
        model_id="meta-llama/Llama-3.3-70B",
        base_url=f"{wire_server.url}/api/v1",
        api_key="${secret:together}",
    ).to_runtime()
    run(OpenAIChatModel("llama", config, Secrets()).request(simple()))
    assert wire_server.last.path == "/api/v1/chat/completions"
    assert wire_server.last.headers["authorization"] == f"Bearer {KEY}"


def test_default_base_url_through_an_injected_client() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=TEXT_ANSWER)

    config = OpenAIModel(provider="openai", model_id="gpt-4.1", api_key="${secret:k}").to_runtime()

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            await OpenAIChatModel("gpt", config, Secrets(), client=client).request(simple())

    run(go())
    assert str(seen[0].url) == "https://api.openai.com/v1/chat/completions"


def test_text_answer(wire_server: WireServer) -> None:
    wire_server.reply(TEXT_ANSWER)
    answer = run(openai(wire_server.url).request(simple()))
    assert answer.text == "Sunny, 21C."
    assert answer.tool_calls == []
    assert answer.stop_reason == "end_turn"
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (19, 10)
    assert answer.model_id == "gpt-4.1"


def test_tool_call_answer_including_invalid_json_arguments(wire_server: WireServer) -> None:
    calls = [
        {
            "id": "call_abc",
            "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": "Oslo"})},
        },
        {
            "id": "call_def",
            "type": "function",
            "function": {"name": "get_time", "arguments": '{"tz": '},
        },
        {"type": "function", "function": {"name": "get_time", "arguments": ""}},
    ]
    wire_server.reply(completion({"content": None, "tool_calls": calls}, "tool_calls"))
    answer = run(openai(wire_server.url).request(conversation()))
    assert answer.text is None
    assert answer.stop_reason == "tool_use"
    first, second, third = answer.tool_calls
    assert (first.id, first.name, first.arguments) == ("call_abc", "get_weather", {"city": "Oslo"})
    assert (second.id, second.arguments, second.raw_arguments) == ("call_def", None, '{"tz": ')
    assert second.arguments_error and "invalid JSON" in second.arguments_error
    assert (third.id, third.arguments) == ("", {})  # no id from the server: the engine assigns one


def test_length_is_max_tokens(wire_server: WireServer) -> None:
    wire_server.reply(completion({"content": "The answer is"}, "length"))
    answer = run(openai(wire_server.url).request(simple()))
    assert (answer.text, answer.stop_reason) == ("The answer is", "max_tokens")


def test_tool_calls_with_finish_reason_stop_are_tool_use(wire_server: WireServer) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
    wire_server.reply(completion({"content": "", "tool_calls": [call]}, "stop"))
    answer = run(openai(wire_server.url).request(simple()))
    assert answer.stop_reason == "tool_use"
    assert answer.tool_calls[0].arguments == {"a": 1}  # ollama sends a mapping


def test_429_is_transient_with_retry_after(wire_server: WireServer) -> None:
    error = {
        "message": "Rate limit reached for gpt-4.1",
        "type": "requests",
        "code": "rate_limit_exceeded",
    }
    wire_server.reply({"error": error}, status=429, headers={"Retry-After": "7"})
    with pytest.raises(TransientModelError) as caught:
        run(openai(wire_server.url).request(simple()))
    assert caught.value.retry_after == 7.0
    assert caught.value.status == 429
    assert "Rate limit reached" in str(caught.value)
    assert KEY not in str(caught.value)


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_are_transient(wire_server: WireServer, status: int) -> None:
    wire_server.reply(
        {"error": {"message": "The server had an error", "type": "server_error"}}, status=status
    )
    with pytest.raises(TransientModelError) as caught:
        run(openai(wire_server.url).request(simple()))
    assert caught.value.status == status


@pytest.mark.parametrize("status", [400, 401])
def test_client_errors_are_not_transient_and_hide_the_key(
    wire_server: WireServer, status: int
) -> None:
    error = {
        "message": f"Incorrect API key provided: {KEY}. You can find your API key at ...",
        "type": "invalid_request_error",
        "code": "invalid_api_key",
    }
    wire_server.reply({"error": error}, status=status)
    with pytest.raises(ModelError) as caught:
        run(openai(wire_server.url).request(simple()))
    assert not isinstance(caught.value, TransientModelError)
    assert "Incorrect API key provided" in str(caught.value)
    assert KEY not in str(caught.value)
    assert caught.value.provider == "openai"


def test_invalid_json_in_a_200_is_a_model_error(wire_server: WireServer) -> None:
    wire_server.reply("<html>proxy says hi", status=200)
    with pytest.raises(ModelError) as caught:
        run(openai(wire_server.url).request(simple()))
    assert not isinstance(caught.value, TransientModelError)
    assert "invalid JSON" in str(caught.value)


def test_answer_without_choices_is_a_model_error(wire_server: WireServer) -> None:
    wire_server.reply({"id": "x", "choices": []})
    with pytest.raises(ModelError, match="choices"):
        run(openai(wire_server.url).request(simple()))


def test_connection_refused_is_transient() -> None:
    with pytest.raises(TransientModelError) as caught:
        run(openai(closed_port_url()).request(simple()))
    assert KEY not in str(caught.value)


def test_final_turn_keeps_tool_definitions_but_sets_tool_choice_none(
    wire_server: WireServer,
) -> None:
    wire_server.reply(TEXT_ANSWER)
    request = conversation()
    request.allow_tools = False
    run(openai(wire_server.url).request(request))
    assert wire_server.last.body["tool_choice"] == "none"
    assert len(wire_server.last.body["tools"]) == len(request.tools)
