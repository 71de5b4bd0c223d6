"""The Chat Completions token-limit field: reasoning models of OpenAI and Azure reject
`max_tokens` and require `max_completion_tokens`; others only know `max_tokens`."""

from __future__ import annotations

import asyncio
import json

import pytest

from runtime.errors import ModelError
from runtime.messages import UserMessage
from runtime.models.base import ModelRequest
from tests.runtime.models.mock_wire import MockWire, text_answer
from tests.runtime.models.recordings import FIXTURES

REQUEST = ModelRequest(system="s", messages=[UserMessage(content="hi")])
OK = text_answer("openai")
#: The real rejection, as Azure OpenAI and OpenAI send it (quoted in Azure/agentops#151).
MAX_TOKENS_REJECTED = {
    "error": {
        "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
        "type": "invalid_request_error",
        "param": "max_tokens",
        "code": "unsupported_parameter",
    }
}


def limit_sent(provider: str, model_id: str, **config: object) -> dict[str, int]:
    wire = MockWire((200, OK))
    asyncio.run(
        wire.model(provider=provider, model_id=model_id, max_tokens=300, **config).request(REQUEST)
    )
    return {k: v for k, v in wire.sent[0].items() if k in ("max_tokens", "max_completion_tokens")}


@pytest.mark.parametrize(
    ("provider", "model_id", "field"),
    [
        ("openai", "gpt-4.1", "max_completion_tokens"),  # OpenAI takes it for every model
        ("openai", "o3-mini", "max_completion_tokens"),
        ("azure_openai", "o1", "max_completion_tokens"),
        ("azure_openai", "o4-mini", "max_completion_tokens"),
        ("azure_openai", "gpt-5-mini", "max_completion_tokens"),
        ("azure_openai", "gpt-5.1-chat", "max_completion_tokens"),
        ("azure_openai", "gpt-4o", "max_tokens"),
        ("azure_openai", "gpt-4.1-mini", "max_tokens"),
        ("ollama", "qwen3", "max_tokens"),
        ("openai_compatible", "meta-llama/llama-4-scout-17b-16e-instruct", "max_tokens"),
    ],
)
def test_the_field_is_chosen_by_provider_and_model_id(
    provider: str, model_id: str, field: str
) -> None:
    assert limit_sent(provider, model_id) == {field: 300}


def test_an_azure_deployment_named_for_a_reasoning_model_counts_too() -> None:
    assert limit_sent("azure_openai", "my-model", deployment="o3-prod") == {
        "max_completion_tokens": 300
    }


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
@pytest.mark.parametrize("provider", ["openai", "azure_openai", "ollama", "openai_compatible"])
def test_the_spec_key_overrides_the_choice(provider: str, field: str) -> None:
    assert limit_sent(provider, "o3", max_tokens_field=field) == {field: 300}


def test_a_rejection_naming_the_field_switches_to_the_other_once_and_remembers() -> None:
    wire = MockWire((400, MAX_TOKENS_REJECTED), (200, OK), (200, OK))
    model = wire.model(provider="azure_openai", model_id="my-reasoner", max_tokens=300)
    assert asyncio.run(model.request(REQUEST)).text == "ok"
    asyncio.run(model.request(REQUEST))
    fields = [[k for k in sent if k.startswith("max_")] for sent in wire.sent]
    assert fields == [["max_tokens"], ["max_completion_tokens"], ["max_completion_tokens"]]


def test_an_explicit_field_is_never_second_guessed() -> None:
    wire = MockWire((400, MAX_TOKENS_REJECTED))
    model = wire.model(
        provider="azure_openai", model_id="o3", max_tokens=300, max_tokens_field="max_tokens"
    )
    with pytest.raises(ModelError, match="max_completion_tokens"):
        asyncio.run(model.request(REQUEST))
    assert len(wire.sent) == 1


def test_the_recorded_o1_mini_rejection_is_permanent_and_not_taken_for_a_field_problem() -> None:
    """openai__400_unsupported_value.json: o1-mini refused the `system` role; that is no
    reason to resend with another token field."""
    recording = json.loads((FIXTURES / "openai__400_unsupported_value.json").read_text())
    wire = MockWire((400, recording["response"]["body"]))
    model = wire.model(provider="openai", model_id="o1-mini", max_tokens=300)
    with pytest.raises(ModelError, match="does not support 'system'"):
        asyncio.run(model.request(REQUEST))
    assert len(wire.sent) == 1 and wire.sent[0]["max_completion_tokens"] == 300
