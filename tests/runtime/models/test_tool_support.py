"""A model that cannot call tools: plain chat for an agent that needs none (only the
automatic `agent_clarify`), a clear MODEL_ERROR for an agent with tools of its own, and
the verdict remembered so the rejected request is not repeated every turn."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from runtime.clock import FakeClock
from runtime.errors import ModelError
from runtime.messages import (
    CLARIFY_TOOL,
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from runtime.models import tool_support
from runtime.models.base import ModelRequest, ModelResponse, ToolSpec
from runtime.models.bedrock import BedrockConverseModel
from runtime.models.failures import ToolsUnsupported
from runtime.models.retry import request_with_fallbacks
from runtime.spec.models import BedrockModel, RetrySettings
from tests.runtime.models.mock_wire import MockWire, text_answer

CLARIFY = ToolSpec(
    CLARIFY_TOOL,
    "Ask the user.",
    {"type": "object", "properties": {"question": {"type": "string"}}},
)
OWN = ToolSpec("lookup_order", "Look an order up.", {"type": "object"})
#: A conversation that already used a tool (a clarification answered by the user).
HISTORY = [
    UserMessage(content="Where is my order?"),
    AssistantMessage(
        tool_calls=[ToolCall(id="call_1", name=CLARIFY_TOOL, arguments={"question": "Which one?"})]
    ),
    ToolResultMessage(tool_call_id="call_1", tool_name=CLARIFY_TOOL, content="ORD-9"),
]
#: Ollama's real answer (ollama/ollama#6027, from /v1/chat/completions).
OLLAMA_NO_TOOLS = {
    "error": {
        "message": "stablelm2:latest does not support tools",
        "type": "api_error",
        "param": None,
        "code": None,
    }
}


@pytest.fixture(autouse=True)
def fresh_verdicts() -> Iterator[None]:
    tool_support.forget()
    yield
    tool_support.forget()


def ask(model: Any, tools: list[ToolSpec], clock: FakeClock | None = None) -> ModelResponse:
    request = ModelRequest(system="s", messages=list(HISTORY), tools=tools)
    _, answer = asyncio.run(
        request_with_fallbacks(
            [(model, RetrySettings().to_runtime())], request, clock or FakeClock()
        )
    )
    return answer


def test_an_agent_without_tools_of_its_own_falls_back_to_plain_chat() -> None:
    wire = MockWire((400, OLLAMA_NO_TOOLS), (200, text_answer("ollama", "It ships today.")))
    model = wire.model(provider="ollama", model_id="stablelm2")
    assert ask(model, [CLARIFY]).text == "It ships today."
    rejected, plain = wire.sent
    assert [t["function"]["name"] for t in rejected["tools"]] == [CLARIFY_TOOL]
    assert "tools" not in plain and "tool_choice" not in plain
    assert [m["role"] for m in plain["messages"]] == ["system", "user", "assistant", "user"]
    assert (
        plain["messages"][2]["content"]
        == '[called tool agent_clarify with {"question":"Which one?"}]'
    )
    assert plain["messages"][3]["content"] == "[result of tool agent_clarify: ORD-9]"


def test_the_verdict_is_remembered_so_later_turns_go_straight_to_plain_chat() -> None:
    wire = MockWire(
        (400, OLLAMA_NO_TOOLS), (200, text_answer("ollama")), (200, text_answer("ollama"))
    )
    model = wire.model(provider="ollama", model_id="stablelm2")
    ask(model, [CLARIFY])
    ask(model, [CLARIFY])
    assert ["tools" in sent for sent in wire.sent] == [True, False, False]


def test_an_agent_with_tools_of_its_own_fails_with_a_clear_model_error() -> None:
    wire = MockWire((400, OLLAMA_NO_TOOLS))
    model = wire.model(name="local", provider="ollama", model_id="stablelm2")
    with pytest.raises(ModelError) as raised:
        ask(model, [OWN, CLARIFY])
    assert raised.value.error_code == "MODEL_ERROR"
    assert "model local (stablelm2) cannot call tools" in str(raised.value)
    assert len(wire.sent) == 1
    with pytest.raises(ModelError, match="cannot call tools"):  # remembered: not sent again
        ask(model, [OWN, CLARIFY])
    assert len(wire.sent) == 1


class Backup:
    name, model_id = "backup", "backup-1"

    async def request(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(text=f"backup with {len(request.tools)} tools", model_id=self.model_id)


def test_a_fallback_model_that_can_call_tools_takes_over() -> None:
    wire = MockWire((400, OLLAMA_NO_TOOLS))
    chain = [
        (wire.model(provider="ollama", model_id="stablelm2"), RetrySettings().to_runtime()),
        (Backup(), RetrySettings().to_runtime()),
    ]
    request = ModelRequest(system="s", messages=list(HISTORY), tools=[OWN, CLARIFY])
    model, answer = asyncio.run(request_with_fallbacks(chain, request, FakeClock()))
    assert (model.name, answer.text) == ("backup", "backup with 2 tools")


REFUSALS = [
    (
        400,
        {"error": {"message": "registry.ollama.ai/library/gemma2:latest does not support tools"}},
    ),
    (
        404,
        {
            "error": {
                "message": "No endpoints found that support tool use. To learn more about provider routing, visit: https://openrouter.ai/docs/provider-routing",
                "code": 404,
            }
        },
    ),
    (
        400,
        {
            "object": "error",
            "message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    (400, {"error": {"message": "tools is not supported", "type": "invalid_request_error"}}),
    (400, {"error": {"message": "tool use is not supported for this model"}}),
    (400, {"error": {"message": "deepseek-reasoner does not support Function Calling"}}),
]


@pytest.mark.parametrize(
    ("status", "body"),
    REFUSALS,
    ids=["ollama", "openrouter", "vllm", "tools", "tool-use", "deepseek"],
)
def test_what_compatible_servers_say_is_recognised(status: int, body: dict) -> None:
    wire = MockWire((status, body))
    model = wire.model(provider="openai_compatible", model_id="x")
    with pytest.raises(ToolsUnsupported):
        asyncio.run(
            model.request(
                ModelRequest(system="", messages=[UserMessage(content="hi")], tools=[OWN])
            )
        )


@pytest.mark.parametrize(
    "message",
    [
        "Unsupported value: 'messages[0].role' does not support 'system' with this model.",
        "This model doesn't support the toolConfig.toolChoice.any field. Remove toolConfig.toolChoice.any and try again.",
        "This model doesn't support tool use in streaming mode.",
    ],
)
def test_other_refusals_are_not_taken_for_it(message: str) -> None:
    wire = MockWire((400, {"error": {"message": message}}))
    with pytest.raises(ModelError) as raised:
        asyncio.run(
            wire.model(provider="openai", model_id="x").request(
                ModelRequest("", [UserMessage(content="hi")], [OWN])
            )
        )
    assert not isinstance(raised.value, ToolsUnsupported)


def test_bedrock_models_without_tool_use_fall_back_too() -> None:
    """Bedrock's ValidationException for DeepSeek R1 (langchain-ai/langchain-aws#447)."""
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    sent: list[dict] = []
    client.meta.events.register(
        "provide-client-params.bedrock-runtime.Converse", lambda params, **_: sent.append(params)
    )
    with Stubber(client) as stubber:
        stubber.add_client_error(
            "converse",
            service_error_code="ValidationException",
            service_message="This model doesn't support tool use.",
            http_status_code=400,
        )
        stubber.add_response(
            "converse",
            {
                "output": {"message": {"role": "assistant", "content": [{"text": "plain"}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                "metrics": {"latencyMs": 1},
            },
        )
        model = BedrockConverseModel(
            "r1",
            BedrockModel(provider="bedrock", model_id="us.deepseek.r1-v1:0").to_runtime(),
            client=client,
        )
        assert ask(model, [CLARIFY]).text == "plain"
    assert "toolConfig" in sent[0] and "toolConfig" not in sent[1]
    assert all(
        "toolUse" not in block and "toolResult" not in block
        for m in sent[1]["messages"]
        for block in m["content"]
    )


# ---- through the engine: the rule reads the agent's spec ---------------------------------


class NoToolsModel:
    """Answers plain chat, refuses any tool definition (as the providers above do)."""

    def __init__(self) -> None:
        self.name, self.model_id, self.requests = "m", "no-tools-1", []

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if request.tools:
            raise ToolsUnsupported(
                "ollama answered HTTP 400: model does not support tools", status=400
            )
        return ModelResponse(text="plain answer", model_id=self.model_id)


def test_in_a_run_an_agent_without_tools_answers_and_one_with_tools_fails() -> None:
    from tests.runtime.engine.kit import make_spec, new_engine, run

    model = NoToolsModel()
    engine = new_engine(make_spec([{"text": "unused"}], tools=[]), models=lambda name: model)
    head = run(engine)
    assert head.status == "succeeded" and engine.result(head.run_id)["result"] == "plain answer"
    assert CLARIFY_TOOL in {t.name for t in model.requests[0].tools}  # offered, then dropped
    assert {t.name for t in model.requests[0].tools} <= tool_support.AUTOMATIC_TOOLS

    tool_support.forget()
    engine = new_engine(
        make_spec([{"text": "unused"}], tools=["echo"]), models=lambda name: NoToolsModel()
    )
    head = run(engine)
    result = engine.result(head.run_id)
    assert head.status == "failed" and result["error_code"] == "MODEL_ERROR"
    assert "model m (no-tools-1) cannot call tools" in result["error_message"]
