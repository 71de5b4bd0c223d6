"""Secrets read from Secrets Manager and SSM Parameter Store (moto), cached per container."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from runtime import secrets
from runtime.spec import AgentfnSpec


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    secrets.forget_all()
    with mock_aws():
        yield
    secrets.forget_all()


def _spec() -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "secrets": {
                "api-key": {"source": "secretsmanager", "name": "prod/api-key"},
                "token": {"source": "ssm", "name": "/prod/token"},
            },
            "models": {"m": {"provider": "scripted", "script": [{"text": "x"}]}},
            "agents": {"a": {"description": "d", "model": "m"}},
        }
    )


def test_secrets_are_read_once_per_container_from_where_the_spec_says(aws: None) -> None:
    boto3.client("secretsmanager").create_secret(Name="prod/api-key", SecretString="sk-1")
    ssm = boto3.client("ssm")
    ssm.put_parameter(Name="/prod/token", Value="tok-1", Type="SecureString")
    resolve = secrets.SecretResolver(_spec())
    reads: list[str] = []

    def count(model: Any, **_: Any) -> None:
        reads.append(model.name)

    assert resolve("key=${secret:api-key}, token=${secret:token}") == "key=sk-1, token=tok-1"
    for client in secrets._clients.values():
        client.meta.events.register("provide-client-params.*.*", count)
    boto3.client("secretsmanager").put_secret_value(SecretId="prod/api-key", SecretString="sk-2")
    assert resolve("${secret:api-key}") == "sk-1"  # cached: read again after CACHE_SECONDS
    assert reads == []
    assert "sk-1" not in secrets.redact("sk-1 tok-1") and "tok-1" not in secrets.redact("tok-1")


def test_a_missing_secret_is_named_without_a_value(aws: None) -> None:
    with pytest.raises(secrets.SecretUnavailable, match="'api-key' could not be read"):
        secrets.SecretResolver(_spec()).value("api-key")
