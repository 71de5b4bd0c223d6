"""Bedrock Converse through a real boto3 client whose calls botocore's Stubber answers; the
Stubber validates every request against the service model, so these are wire-exact."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError
from botocore.stub import Stubber

from runtime.errors import ModelError, TransientModelError
from runtime.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from runtime.models.base import ModelRequest, ToolSpec
from runtime.models.bedrock import BedrockConverseModel
from runtime.spec.models import BedrockModel
from tests.runtime.models.conversation import SYSTEM, conversation, run, simple

MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0"


@pytest.fixture
def client() -> Any:
    return boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


def bedrock(client: Any, **extra: Any) -> BedrockConverseModel:
    return BedrockConverseModel(
        "claude", BedrockModel(provider="bedrock", model_id=MODEL_ID, **extra), client=client
    )


def converse(content: list[dict], stop: str = "end_turn") -> dict:
    """A Converse response as the service model documents it."""
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 30, "outputTokens": 5, "totalTokens": 35},
        "metrics": {"latencyMs": 120},
    }


SIMPLE_PARAMS = {
    "modelId": MODEL_ID,
    "messages": [{"role": "user", "content": [{"text": "hi"}]}],
    "system": [{"text": SYSTEM}],
}


def test_request_params(client: Any, stubber: Stubber) -> None:
    expected = {
        "modelId": MODEL_ID,
        "system": [{"text": SYSTEM}],
        "inferenceConfig": {"maxTokens": 1000, "temperature": 0.1},
        "messages": [
            {"role": "user", "content": [{"text": "Weather and time in Paris?"}]},
            {
                "role": "assistant",
                "content": [
                    {"text": "Checking both."},
                    {
                        "toolUse": {
                            "toolUseId": "call_1",
                            "name": "get_weather",
                            "input": {"city": "Paris"},
                        }
                    },
                    {
                        "toolUse": {
                            "toolUseId": "call_2",
                            "name": "get_time",
                            "input": {"tz": "Europe/Paris"},
                        }
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "call_1",
                            "content": [{"text": "18C, cloudy"}],
                            "status": "success",
                        }
                    },
                    {
                        "toolResult": {
                            "toolUseId": "call_2",
                            "content": [{"text": "unknown time zone"}],
                            "status": "error",
                        }
                    },
                ],
            },
        ],
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "get_weather",
                        "description": "Current weather for a city.",
                        "inputSchema": {
                            "json": {
                                "type": "object",
                                "properties": {"city": {"type": "string"}},
                                "required": ["city"],
                            }
                        },
                    }
                },
                {
                    "toolSpec": {
                        "name": "get_time",
                        "description": "Current time in a time zone.",
                        "inputSchema": {
                            "json": {"type": "object", "properties": {"tz": {"type": "string"}}}
                        },
                    }
                },
            ]
        },
    }
    stubber.add_response("converse", converse([{"text": "ok"}]), expected)
    run(bedrock(client, max_tokens=1000, temperature=0.1).request(conversation()))


def test_unset_options_omitted_and_same_roles_merged(client: Any, stubber: Stubber) -> None:
    broken = ToolCall.from_json("tu_9", "get_weather", '{"city": ')
    request = ModelRequest(
        system="",
        messages=[
            UserMessage(content="one"),
            UserMessage(content="two"),
            AssistantMessage(text=None, tool_calls=[broken]),
        ],
    )
    expected = {
        "modelId": MODEL_ID,
        "messages": [
            {"role": "user", "content": [{"text": "one"}, {"text": "two"}]},
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "tu_9", "name": "get_weather", "input": {}}}],
            },
        ],
    }
    stubber.add_response("converse", converse([{"text": "ok"}]), expected)
    run(bedrock(client).request(request))


def test_text_answer(client: Any, stubber: Stubber) -> None:
    stubber.add_response(
        "converse", converse([{"text": "Sunny, "}, {"text": "21C."}]), SIMPLE_PARAMS
    )
    answer = run(bedrock(client).request(simple()))
    assert answer.text == "Sunny, 21C."
    assert answer.tool_calls == []
    assert answer.stop_reason == "end_turn"
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (30, 5)
    assert answer.model_id == MODEL_ID


def test_tool_use_answer(client: Any, stubber: Stubber) -> None:
    content: list[dict[str, Any]] = [
        {"text": "Checking."},
        {"toolUse": {"toolUseId": "tooluse_a", "name": "get_weather", "input": {"city": "Oslo"}}},
        {"toolUse": {"toolUseId": "tooluse_b", "name": "get_time", "input": {}}},
    ]
    stubber.add_response("converse", converse(content, "tool_use"), SIMPLE_PARAMS)
    answer = run(bedrock(client).request(simple()))
    assert answer.text == "Checking."
    assert answer.stop_reason == "tool_use"
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [
        ("tooluse_a", "get_weather", {"city": "Oslo"}),
        ("tooluse_b", "get_time", {}),
    ]


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("max_tokens", "max_tokens"),
        ("end_turn", "end_turn"),
        ("stop_sequence", "end_turn"),
        ("guardrail_intervened", "end_turn"),
        ("content_filtered", "end_turn"),
    ],
)
def test_stop_reasons(client: Any, stubber: Stubber, wire: str, expected: str) -> None:
    stubber.add_response("converse", converse([{"text": "partial"}], wire), SIMPLE_PARAMS)
    assert run(bedrock(client).request(simple())).stop_reason == expected


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ThrottlingException", 429),
        ("ServiceUnavailableException", 503),
        ("ModelNotReadyException", 429),
        ("InternalServerException", 500),
        ("ModelTimeoutException", 408),
    ],
)
def test_transient_client_errors(client: Any, stubber: Stubber, code: str, status: int) -> None:
    stubber.add_client_error(
        "converse",
        service_error_code=code,
        service_message="Too many requests",
        http_status_code=status,
    )
    with pytest.raises(TransientModelError) as caught:
        run(bedrock(client).request(simple()))
    assert caught.value.status == status
    assert code in str(caught.value)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ValidationException", 400),
        ("AccessDeniedException", 403),
        ("ResourceNotFoundException", 404),
    ],
)
def test_other_client_errors_are_not_transient(
    client: Any, stubber: Stubber, code: str, status: int
) -> None:
    stubber.add_client_error(
        "converse",
        service_error_code=code,
        service_message="The model id is invalid",
        http_status_code=status,
    )
    with pytest.raises(ModelError) as caught:
        run(bedrock(client).request(simple()))
    assert not isinstance(caught.value, TransientModelError)
    assert f"{code}: The model id is invalid" in str(caught.value)


class _Unreachable:
    def __init__(self, error: Exception):
        self.error = error

    def converse(self, **_: Any) -> dict:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        EndpointConnectionError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com"),
        ReadTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com"),
    ],
)
def test_connection_errors_are_transient(error: Exception) -> None:
    with pytest.raises(TransientModelError):
        run(bedrock(_Unreachable(error)).request(simple()))


def test_client_is_created_lazily_in_the_configured_region(
    monkeypatch: pytest.MonkeyPatch, client: Any, stubber: Stubber
) -> None:
    created: list[tuple[tuple, dict]] = []

    def fake_client(*args: Any, **kwargs: Any) -> Any:
        created.append((args, kwargs))
        return client

    monkeypatch.setattr(boto3, "client", fake_client)
    model = BedrockConverseModel(
        "claude",
        BedrockModel(provider="bedrock", model_id=MODEL_ID, region="eu-west-1", timeout=30),
    )
    assert created == []
    stubber.add_response("converse", converse([{"text": "ok"}]), SIMPLE_PARAMS)
    run(model.request(simple()))
    run_twice = converse([{"text": "again"}])
    stubber.add_response("converse", run_twice, SIMPLE_PARAMS)
    assert run(model.request(simple())).text == "again"
    [(args, kwargs)] = created  # built once, reused
    assert args == ("bedrock-runtime",)
    assert kwargs["region_name"] == "eu-west-1"
    assert kwargs["config"].read_timeout == 30
    assert kwargs["config"].retries == {"total_max_attempts": 1}


def test_final_turn_sends_no_tool_config_and_earlier_tool_blocks_as_text(
    client: Any, stubber: Stubber
) -> None:
    """Converse has no "none" tool choice and rejects tool blocks without a toolConfig."""
    messages = [
        UserMessage(content="hi"),
        AssistantMessage(
            text="Checking.", tool_calls=[ToolCall(id="t1", name="lookup", arguments={"id": 1})]
        ),
        ToolResultMessage(tool_call_id="t1", tool_name="lookup", content="found", success=True),
    ]
    expected = {
        "modelId": MODEL_ID,
        "system": [{"text": SYSTEM}],
        "messages": [
            {"role": "user", "content": [{"text": "hi"}]},
            {
                "role": "assistant",
                "content": [{"text": "Checking."}, {"text": '[called tool lookup with {"id":1}]'}],
            },
            {"role": "user", "content": [{"text": "[result of tool lookup: found]"}]},
        ],
    }
    stubber.add_response("converse", converse([{"text": "Final."}]), expected)
    tools = [ToolSpec("lookup", "Look up.", {"type": "object"})]
    answer = run(
        bedrock(client).request(
            ModelRequest(system=SYSTEM, messages=messages, tools=tools, allow_tools=False)
        )
    )
    assert answer.text == "Final."
