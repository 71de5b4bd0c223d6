"""Every provider's way of saying "the prompt is too long" is read as ContextOverflow (the
engine then compacts and retries), and look-alikes are not: a tokens-per-minute rate limit
stays a rate limit, an unrelated 400 stays a plain error."""

from __future__ import annotations

import asyncio
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from runtime.errors import ModelError, TransientModelError
from runtime.messages import UserMessage
from runtime.models.base import ModelRequest
from runtime.models.bedrock import BedrockConverseModel
from runtime.models.failures import ContextOverflow
from runtime.spec.models import BedrockModel
from tests.runtime.models.mock_wire import MockWire

REQUEST = ModelRequest(system="s", messages=[UserMessage(content="hi")])

# The error answers as the providers document or were seen to send them.
OVERFLOW: list[tuple[str, int, Any]] = [
    (
        "openai",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, "
                "your messages resulted in 130412 tokens. Please reduce the length of the "
                "messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    (
        "azure_openai",
        400,
        {"error": {"message": "Too long.", "code": "context_length_exceeded", "param": None}},
    ),
    (
        "anthropic",
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 215321 tokens > 200000 maximum",
            },
        },
    ),
    (
        "gemini",
        400,
        {
            "error": {
                "code": 400,
                "message": "The input token count (1198765) exceeds the maximum number of "
                "tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            }
        },
    ),
    (
        "openai_compatible",  # vLLM
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 32768 tokens. However, you "
            "requested 40000 tokens in the messages.",
            "type": "BadRequestError",
            "code": 400,
        },
    ),
    (
        "ollama",  # llama.cpp-based servers
        400,
        {
            "error": {
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
            }
        },
    ),
]


@pytest.mark.parametrize(
    ("provider", "status", "body"),
    OVERFLOW,
    ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(OVERFLOW)],
)
def test_each_providers_prompt_too_long_is_a_context_overflow(
    provider: str, status: int, body: Any
) -> None:
    wire = MockWire((status, body))
    with pytest.raises(ContextOverflow) as raised:
        asyncio.run(wire.model(provider=provider, model_id="some-model").request(REQUEST))
    assert raised.value.error_code == "CONTEXT_OVERFLOW"
    assert "context window" in str(raised.value)


@pytest.mark.parametrize(
    "message",
    [
        "prompt is too long: 212000 tokens > 200000 maximum",
        "Input is too long for requested model.",
    ],
)
def test_bedrock_prompt_too_long_is_a_context_overflow(message: str) -> None:
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stubber:
        stubber.add_client_error(
            "converse",
            service_error_code="ValidationException",
            service_message=message,
            http_status_code=400,
        )
        model = BedrockConverseModel(
            "b",
            BedrockModel(provider="bedrock", model_id="anthropic.claude-3").to_runtime(),
            client=client,
        )
        with pytest.raises(ContextOverflow):
            asyncio.run(model.request(REQUEST))


def test_a_tokens_per_minute_limit_is_not_an_overflow() -> None:
    body = {
        "error": {
            "message": "Request too large for gpt-4o in organization org-x on tokens per min "
            "(TPM): Limit 30000, Requested 50000. The input or output tokens must be reduced.",
            "type": "tokens",
            "code": "rate_limit_exceeded",
        }
    }
    wire = MockWire((429, body))
    with pytest.raises(TransientModelError) as raised:
        asyncio.run(wire.model(provider="openai", model_id="gpt-4o").request(REQUEST))
    assert not isinstance(raised.value, ContextOverflow)


def test_an_unrelated_bad_request_is_a_plain_model_error() -> None:
    body = {
        "error": {"message": "Invalid value for 'temperature'.", "type": "invalid_request_error"}
    }
    wire = MockWire((400, body))
    with pytest.raises(ModelError) as raised:
        asyncio.run(wire.model(provider="openai", model_id="gpt-4o").request(REQUEST))
    assert not isinstance(raised.value, ContextOverflow)


def test_overflow_skips_retries_and_fallbacks() -> None:
    from runtime.clock import FakeClock
    from runtime.models.retry import request_with_fallbacks
    from runtime.spec.models import RetrySettings

    provider, status, body = OVERFLOW[0]
    wire = MockWire((status, body))
    backup = MockWire((200, {"choices": []}))
    clock = FakeClock()
    chain = [
        (
            wire.model(provider=provider, model_id="gpt-4.1"),
            RetrySettings(max_attempts=4).to_runtime(),
        ),
        (backup.model(provider="openai", model_id="gpt-4.1-mini"), RetrySettings().to_runtime()),
    ]
    with pytest.raises(ContextOverflow):
        asyncio.run(request_with_fallbacks(chain, REQUEST, clock))
    assert len(wire.sent) == 1 and backup.sent == [] and clock.slept == []
