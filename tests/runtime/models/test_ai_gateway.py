"""`ai_gateway`: Vercel AI Gateway's OpenAI-compatible endpoint, a named provider with its
base URL by default and its key required; exercised against a loopback server (the
recorded OpenAI-compatible answers replayed) by overriding `base_url`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from infra.sam.prices import lookup
from runtime.models.factory import build_model
from runtime.models.openai_chat import OpenAIChatModel
from runtime.models.windows import context_window
from runtime.spec import plain
from runtime.spec.models import AiGatewayModel
from tests.runtime.models.conversation import KEY, Secrets, conversation, run
from tests.runtime.models.wire_server import WireServer

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "provider_recordings"


def gateway(**extra: object) -> plain.AiGatewayModel:
    return AiGatewayModel.model_validate(
        {
            "provider": "ai_gateway",
            "model_id": "anthropic/claude-sonnet-4",
            "api_key": "${secret:ai_gateway_key}",
            **extra,
        }
    ).to_runtime()


def test_defaults_to_the_gateway_url_and_requires_a_key() -> None:
    assert str(gateway().base_url) == "https://ai-gateway.vercel.sh/v1"
    with pytest.raises(ValidationError, match="api_key"):
        AiGatewayModel.model_validate(
            {"provider": "ai_gateway", "model_id": "openai/gpt-4.1"}
        ).to_runtime()
    assert context_window(gateway()) == 200_000  # a Claude model, known by its id


def test_speaks_chat_completions_with_the_key_as_bearer(wire_server: WireServer) -> None:
    recorded = json.loads((RECORDED / "openai__one_tool_call.json").read_text())
    wire_server.reply(recorded["response"]["body"])
    secrets = Secrets()
    model = build_model("gw", gateway(base_url=f"{wire_server.url}/v1", max_tokens=50), secrets)
    assert isinstance(model, OpenAIChatModel)
    answer = run(model.request(conversation()))
    sent = wire_server.last
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert secrets.asked == ["${secret:ai_gateway_key}"]
    assert sent.body["model"] == "anthropic/claude-sonnet-4"
    assert sent.body["max_tokens"] == 50  # not an OpenAI model: the common field
    assert sent.body["messages"][0] == {"role": "system", "content": "You are a terse assistant."}
    assert [c.name for c in answer.tool_calls] == ["get_user_country"]


def test_price_is_the_creators_list_price() -> None:
    price = lookup(gateway(model_id="openai/gpt-4o"))
    direct = lookup(
        AiGatewayModel.model_validate(
            {"provider": "ai_gateway", "model_id": "no-slash", "api_key": "${secret:k}"}
        ).to_runtime()
    )
    assert price is not None and price.source and "openai/gpt-4o" in price.source
    assert price.input_per_mtok > 0 and direct is None
