"""A model whose API key cannot be read has failed like any other model: the run fails with
SECRET_UNAVAILABLE naming the secret (README, Secrets) when it was the only model, and the
next fallback answers when there is one. Secrets Manager is moto's; nothing leaves the
machine (a key that cannot be read stops the call before any request)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from runtime import secrets
from runtime.engine.loop import Engine
from runtime.spec import AgentfnSpec
from runtime.store.memory import MemoryStore

MODELS: dict[str, Any] = {
    "gpt": {"provider": "openai", "model_id": "gpt-4.1", "api_key": "${secret:openai-key}"},
    "claude": {
        "provider": "anthropic",
        "model_id": "claude-sonnet-4-5",
        "api_key": "${secret:anthropic-key}",
    },
    "backup": {
        "provider": "scripted",
        "model_id": "backup-v1",
        "script": [{"text": "from backup"}],
    },
    "broken": {
        "provider": "scripted",
        "script": [{"error": {"status": 400, "message": "bad request"}}],
    },
}


@pytest.fixture(autouse=True)
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AGENTFN_SECRET_OPENAI_KEY", "AGENTFN_SECRET_ANTHROPIC_KEY"):
        monkeypatch.delenv(name, raising=False)
    secrets.forget_all()
    with mock_aws():  # the secrets are declared, never created
        yield
    secrets.forget_all()


def _run(model: str, fallbacks: list[str]) -> dict[str, Any]:
    models = {name: dict(config) for name, config in MODELS.items()}
    models[model]["fallbacks"] = fallbacks
    spec = AgentfnSpec.model_validate(
        {
            "version": 1,
            "secrets": {
                "openai-key": {"source": "secretsmanager", "name": "prod/openai"},
                "anthropic-key": {"source": "secretsmanager", "name": "prod/anthropic"},
            },
            "models": models,
            "agents": {"a": {"description": "d", "model": model}},
        }
    )
    engine = Engine(spec, MemoryStore())
    head = asyncio.run(engine.run("a", "hello"))
    return engine.result(head.run_id)


def test_a_lone_model_without_its_key_fails_the_run_with_secret_unavailable() -> None:
    result = _run("gpt", [])
    assert result["status"] == "failed"
    assert result["error_code"] == "SECRET_UNAVAILABLE"  # not INTERNAL
    assert result["error_message"].startswith("gpt failed: secret 'openai-key' could not be read")
    assert "AGENTFN_SECRET_OPENAI_KEY" in result["error_message"]  # how to give it locally


def test_a_primary_without_its_key_hands_over_to_its_fallback() -> None:
    result = _run("gpt", ["backup"])
    assert result["status"] == "succeeded" and result["result"] == "from backup"
    assert result["model_used"] == "backup-v1"


def test_a_fallback_without_its_key_reports_the_primarys_error_too() -> None:
    result = _run("broken", ["gpt"])
    assert result["status"] == "failed" and result["error_code"] == "MODEL_ERROR"
    message = result["error_message"]
    assert message.startswith("every model failed: broken: ")
    assert "bad request" in message and "gpt: secret 'openai-key' could not be read" in message


def test_when_every_model_lacks_its_key_the_code_says_so_and_names_each() -> None:
    result = _run("gpt", ["claude"])
    assert result["error_code"] == "SECRET_UNAVAILABLE"
    assert "'openai-key'" in result["error_message"]
    assert "'anthropic-key'" in result["error_message"]
