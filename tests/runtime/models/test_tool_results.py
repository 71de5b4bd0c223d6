"""Tool results as each provider takes them: images reach the models that accept images in
tool results (Anthropic, Bedrock's Claude and Nova, Gemini 3: see test_gemini_fidelity),
the others read the text that describes them; a failed call (an MCP `isError` result
included) is marked as an error for every provider."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from runtime.messages import AssistantMessage, ImagePart, ToolCall, ToolResultMessage, UserMessage
from runtime.models.base import ModelRequest, ToolSpec
from runtime.models.bedrock import BedrockConverseModel
from runtime.spec.models import BedrockModel
from runtime.structs import replace
from tests.runtime.models.mock_wire import MockWire, text_answer

PNG_BYTES = b"\x89PNG\r\n\x1a\n"
PNG = ImagePart(mime_type="image/png", data=base64.b64encode(PNG_BYTES).decode())
SVG = ImagePart(mime_type="image/svg+xml", data=base64.b64encode(b"<svg/>").decode())
CALL = ToolCall(id="call_1", name="screenshot", arguments={})
SHOT = ToolResultMessage(
    tool_call_id="call_1",
    tool_name="screenshot",
    content="Page rendered. [image: image/png, 8 bytes] [image: image/svg+xml, 6 bytes]",
    images=[PNG, SVG],
)
#: What an MCP server's `isError` result becomes: the server's own text, success=False.
MCP_ERROR = ToolResultMessage(
    tool_call_id="call_1", tool_name="screenshot", content="browser not running", success=False
)


def request_with(result: ToolResultMessage) -> ModelRequest:
    return ModelRequest(
        system="",
        messages=[UserMessage(content="Look."), AssistantMessage(tool_calls=[CALL]), result],
        tools=[ToolSpec("screenshot", "Take one.", {"type": "object"})],
    )


def http_sent(provider: str, result: ToolResultMessage, **config: Any) -> dict[str, Any]:
    wire = MockWire((200, text_answer(provider)))
    asyncio.run(wire.model(provider=provider, **config).request(request_with(result)))
    return wire.sent[0]


def test_anthropic_gets_the_images_it_accepts_as_blocks_of_the_tool_result() -> None:
    block = http_sent("anthropic", SHOT, model_id="claude-sonnet-4-5")["messages"][-1]["content"][0]
    assert block == {
        "type": "tool_result",
        "tool_use_id": "call_1",
        "content": [
            {"type": "text", "text": SHOT.content},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PNG.data},
            },
        ],
        "is_error": False,
    }


def test_anthropic_marks_an_mcp_error_result_as_is_error() -> None:
    block = http_sent("anthropic", MCP_ERROR, model_id="claude-sonnet-4-5")["messages"][-1][
        "content"
    ][0]
    assert block["is_error"] is True and block["content"] == "browser not running"


@pytest.mark.parametrize("provider", ["openai", "azure_openai", "ollama", "openai_compatible"])
def test_chat_completions_get_the_text_and_the_error_said_in_it(provider: str) -> None:
    """Tool messages take text only, with no error flag: the text describes the images and
    says a failure in front."""
    shot = http_sent(provider, SHOT, model_id="gpt-4.1")["messages"][-1]
    assert shot == {"role": "tool", "tool_call_id": "call_1", "content": SHOT.content}
    failed = http_sent(provider, MCP_ERROR, model_id="gpt-4.1")["messages"][-1]
    assert failed["content"] == "Error: browser not running"


# ---- Bedrock: the Stubber checks every request against the service model -------------


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


CONVERSE_ANSWER = {
    "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
    "stopReason": "end_turn",
    "usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4},
    "metrics": {"latencyMs": 10},
}


def bedrock_result(client: Any, stubber: Stubber, model_id: str, result: ToolResultMessage) -> dict:
    seen: dict[str, Any] = {}
    stubber.add_response("converse", CONVERSE_ANSWER)
    client.meta.events.register(
        "provide-client-params.bedrock-runtime.Converse", lambda params, **_: seen.update(params)
    )
    model = BedrockConverseModel(
        "b", BedrockModel(provider="bedrock", model_id=model_id), client=client
    )
    asyncio.run(model.request(request_with(result)))
    return seen["messages"][-1]["content"][0]["toolResult"]


@pytest.mark.parametrize(
    "model_id", ["us.anthropic.claude-sonnet-4-20250514-v1:0", "amazon.nova-pro-v1:0"]
)
def test_bedrock_claude_and_nova_get_images_and_the_error_status(
    client: Any, stubber: Stubber, model_id: str
) -> None:
    assert bedrock_result(client, stubber, model_id, SHOT) == {
        "toolUseId": "call_1",
        "content": [
            {"text": SHOT.content},
            {"image": {"format": "png", "source": {"bytes": PNG_BYTES}}},
        ],
        "status": "success",
    }


def test_bedrock_marks_an_mcp_error_result_with_status_error(client: Any, stubber: Stubber) -> None:
    result = bedrock_result(
        client, stubber, "us.anthropic.claude-sonnet-4-20250514-v1:0", MCP_ERROR
    )
    assert result["status"] == "error" and result["content"] == [{"text": "browser not running"}]


@pytest.mark.parametrize(
    "model_id", ["meta.llama3-3-70b-instruct-v1:0", "mistral.mistral-large-2407-v1:0"]
)
def test_other_bedrock_models_get_neither_field_they_reject_and_read_the_error_in_the_text(
    client: Any, stubber: Stubber, model_id: str
) -> None:
    """ "This field is only supported by Amazon Nova and Anthropic Claude 3 and 4 models"
    (ToolResultBlock.status, ToolResultContentBlock.image in the service model)."""
    assert bedrock_result(client, stubber, model_id, SHOT) == {
        "toolUseId": "call_1",
        "content": [{"text": SHOT.content}],
    }
    assert bedrock_result(client, stubber, model_id, MCP_ERROR) == {
        "toolUseId": "call_1",
        "content": [{"text": "Error: browser not running"}],
    }


def test_bedrock_never_sends_a_blank_tool_result(client: Any, stubber: Stubber) -> None:
    """Converse rejects blank text blocks, and an error result without content."""
    empty = replace(MCP_ERROR, content="")
    result = bedrock_result(client, stubber, "us.anthropic.claude-sonnet-4-20250514-v1:0", empty)
    assert result["content"] == [{"text": "(no output)"}]
