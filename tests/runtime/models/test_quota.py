"""An exhausted quota or credit is not a rate limit: it fails at once, naming the provider
and saying the account's quota or billing is exhausted, instead of being retried for
minutes (a fallback model, if any, is still tried)."""

from __future__ import annotations

import asyncio
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from runtime.clock import FakeClock
from runtime.errors import ModelError, TransientModelError
from runtime.messages import UserMessage
from runtime.models.base import ModelRequest, ModelResponse
from runtime.models.bedrock import BedrockConverseModel
from runtime.models.failures import QuotaExhausted
from runtime.models.retry import request_with_fallbacks
from runtime.spec.models import BedrockModel, RetrySettings
from tests.runtime.models.mock_wire import MockWire

REQUEST = ModelRequest(system="", messages=[UserMessage(content="hi")])

#: Real bodies: OpenAI's documented 429 (https://platform.openai.com/docs/guides/error-codes),
#: Anthropic's 400 for an empty credit balance, OpenRouter's 402.
EXHAUSTED: list[tuple[str, int, dict[str, Any]]] = [
    (
        "openai",
        429,
        {
            "error": {
                "message": "You exceeded your current quota, please check your plan and billing "
                "details. For more information on this error, read the docs: "
                "https://platform.openai.com/docs/guides/error-codes/api-errors.",
                "type": "insufficient_quota",
                "param": None,
                "code": "insufficient_quota",
            }
        },
    ),
    (
        "anthropic",
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "Your credit balance is too low to access the Anthropic API. Please go "
                "to Plans & Billing to upgrade or purchase credits.",
            },
        },
    ),
    (
        "openai_compatible",
        402,
        {
            "error": {
                "code": 402,
                "message": "Insufficient credits. Add more using https://openrouter.ai/settings/credits",
            }
        },
    ),
]


@pytest.mark.parametrize(("provider", "status", "body"), EXHAUSTED, ids=[e[0] for e in EXHAUSTED])
def test_an_exhausted_quota_fails_at_once_with_a_clear_message(
    provider: str, status: int, body: dict
) -> None:
    wire = MockWire((status, body))
    model = wire.model(provider=provider, model_id="some-model")
    with pytest.raises(QuotaExhausted) as raised:
        asyncio.run(model.request(REQUEST))
    error = raised.value
    assert not isinstance(error, TransientModelError)
    assert str(error).startswith(f"{provider}: the account's quota or billing is exhausted")
    assert error.provider == provider


class Backup:
    name, model_id = "backup", "backup-1"

    async def request(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(text="from backup", model_id=self.model_id)


def test_it_is_not_retried_but_the_fallback_model_is_tried() -> None:
    provider, status, body = EXHAUSTED[0]
    wire = MockWire((status, body))
    clock = FakeClock()
    chain = [
        (
            wire.model(provider=provider, model_id="gpt-4.1"),
            RetrySettings(max_attempts=4).to_runtime(),
        ),
        (Backup(), RetrySettings().to_runtime()),
    ]
    model, answer = asyncio.run(request_with_fallbacks(chain, REQUEST, clock))
    assert (model.name, answer.text) == ("backup", "from backup")
    assert len(wire.sent) == 1 and clock.slept == []


def test_a_plain_openai_rate_limit_stays_transient() -> None:
    body = {
        "error": {
            "message": "Rate limit reached for gpt-4.1 in organization org-x on tokens per min (TPM): "
            "Limit 30000, Used 29876, Requested 1200. Please try again in 2.152s.",
            "type": "tokens",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    wire = MockWire((429, body, {"retry-after": "3"}))
    with pytest.raises(TransientModelError) as raised:
        asyncio.run(wire.model(provider="openai", model_id="gpt-4.1").request(REQUEST))
    assert raised.value.retry_after == 3.0


def test_bedrock_out_of_daily_tokens_is_exhausted_not_throttled() -> None:
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stubber:
        stubber.add_client_error(
            "converse",
            service_error_code="ThrottlingException",
            service_message="Too many tokens per day, please wait before trying again.",
            http_status_code=429,
        )
        stubber.add_client_error(
            "converse",
            service_error_code="ThrottlingException",
            service_message="Too many requests, please wait before trying again.",
            http_status_code=429,
        )
        model = BedrockConverseModel(
            "b",
            BedrockModel(provider="bedrock", model_id="amazon.nova-pro-v1:0").to_runtime(),
            client=client,
        )
        with pytest.raises(QuotaExhausted, match="bedrock: the account's quota"):
            asyncio.run(model.request(REQUEST))
        with pytest.raises(TransientModelError):
            asyncio.run(model.request(REQUEST))


def test_a_quota_error_is_a_model_error_for_the_run() -> None:
    assert issubclass(QuotaExhausted, ModelError) and QuotaExhausted.error_code == "MODEL_ERROR"
