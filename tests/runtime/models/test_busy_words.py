"""Retry on the words providers use (issue 25, seed 001): a provider that is busy does not
always answer 429/503. A 418 "request rate exceeded" or a 400 "model is overloaded" is
retried (by status AND by the provider's error type, code and message), against a real
HTTP server on loopback; the recorded real answers keep their meaning."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from runtime.clock import FakeClock
from runtime.errors import ModelError, TransientModelError
from runtime.models.failures import classify_http, says_busy
from runtime.models.openai_chat import OpenAIChatModel
from runtime.models.retry import request_with_fallbacks
from runtime.spec.models import OpenAIModel, RetrySettings
from tests.runtime.models.conversation import Secrets, conversation
from tests.runtime.models.recordings import FIXTURES
from tests.runtime.models.wire_server import WireServer

ANSWER = {
    "id": "c1",
    "object": "chat.completion",
    "model": "gpt-4.1",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}

BUSY: list[tuple[int, dict[str, Any]]] = [
    (418, {"error": {"message": "request rate exceeded, slow down", "type": "error"}}),
    (400, {"error": {"message": "The model is overloaded. Please try again later."}}),
    (400, {"error": {"message": "Bad things", "type": "overloaded_error"}}),  # type alone
    (409, {"error": {"message": "Insufficient capacity for this model right now"}}),
    (400, {"error": {"message": "Throttled", "code": "throttling_exception"}}),
]


def _model(url: str) -> OpenAIChatModel:
    config = OpenAIModel(
        provider="openai", model_id="gpt-4.1", api_key="${secret:openai_key}", base_url=url
    )
    return OpenAIChatModel("gpt", config, Secrets())


@pytest.mark.parametrize(("status", "body"), BUSY, ids=[b[1]["error"]["message"] for b in BUSY])
def test_a_busy_answer_is_retried_whatever_its_status(
    wire_server: WireServer, status: int, body: dict[str, Any]
) -> None:
    wire_server.reply(body, status=status)
    wire_server.reply(ANSWER)
    clock = FakeClock()
    chain = [(_model(f"{wire_server.url}/v1"), RetrySettings(max_attempts=3))]
    _, answer = asyncio.run(request_with_fallbacks(chain, conversation(), clock))
    assert answer.text == "ok" and len(wire_server.requests) == 2 and len(clock.slept) == 1


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "Invalid value for 'temperature': must be at most 2"),
        (401, "Rate limit check failed: invalid API key"),  # the key is wrong: never busy
        (404, "The model is overloaded or does not exist"),
    ],
)
def test_a_request_that_is_wrong_is_not_retried(
    wire_server: WireServer, status: int, message: str
) -> None:
    wire_server.reply({"error": {"message": message}}, status=status)
    chain = [(_model(f"{wire_server.url}/v1"), RetrySettings(max_attempts=3))]
    with pytest.raises(ModelError) as raised:
        asyncio.run(request_with_fallbacks(chain, conversation(), FakeClock()))
    assert not isinstance(raised.value, TransientModelError)
    assert len(wire_server.requests) == 1


def _recording(name: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / f"{name}.json").read_text())["response"])


@pytest.mark.parametrize(
    "name",
    [
        "anthropic__529_overloaded",
        "anthropic__429_rate_limit",
        "bedrock__429_throttling",
        "openai_compatible__429_openrouter",
    ],
)
def test_recorded_busy_answers_say_so_by_their_type_or_words_not_only_their_status(
    name: str,
) -> None:
    """Each recorded answer, sent with a status that alone would not be retried (400),
    is still busy: its type, code or message says so."""
    response = _recording(name)
    error = response["body"].get("error") if isinstance(response["body"], dict) else None
    message = str((error or {}).get("message") or response["body"].get("message") or "")
    assert says_busy(400, message, response["body"], response["headers"])
    answer = classify_http("p", 400, message, response["headers"], response["body"])
    assert isinstance(answer, TransientModelError)


@pytest.mark.parametrize(
    "name",
    ["anthropic__400_invalid_request", "openai__400_unsupported_value", "bedrock__400_validation"],
)
def test_recorded_invalid_requests_stay_not_retried(name: str) -> None:
    response = _recording(name)
    body = response["body"]
    error = body.get("error") if isinstance(body, dict) else None
    message = str((error or {}).get("message") or body.get("message") or "")
    answer = classify_http("p", response["status"], message, response["headers"], body)
    assert not isinstance(answer, TransientModelError)
