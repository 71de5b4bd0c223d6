"""SecretResolver: values come from the environment override or the declared store, and every
value resolved (by any resolver in the process) is redacted in every spelling by
`redactor()`/`redact()`; model providers' error messages go through the same redaction."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from runtime import secrets as secrets_module
from runtime.errors import ModelError
from runtime.models.anthropic import AnthropicMessagesModel
from runtime.models.base import ModelRequest
from runtime.secrets import SecretResolver, SecretUnavailable
from runtime.spec import AgentfnSpec
from runtime.spec.models import AnthropicModel
from tests.runtime.models.wire_server import WireServer

REDACTED = "[redacted]"
DB_SECRET = json.dumps({"username": "svc", "password": 'p"w\\1', "host": "db.internal"})
API_KEY = 'sk-ant-"quoted"-\\back\\slash-0123456789'


@pytest.fixture(autouse=True)
def forget() -> Iterator[None]:
    """The set of resolved values lives as long as the process: keep tests apart."""
    yield
    secrets_module.forget_all()


@pytest.fixture
def spec() -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "secrets": {"db": {"name": "prod/db"}, "key": {"source": "ssm"}},
            "models": {"m": {"provider": "scripted", "script": [{"text": "hi"}]}},
            "agents": {"a": {"description": "d", "model": "m", "system_prompt": "s"}},
        }
    )


def fetch(source: str, target: str) -> str:
    return {("secretsmanager", "prod/db"): DB_SECRET, ("ssm", "key"): "plain-key-1"}[
        (source, target)
    ]


def test_resolved_values_are_redacted_in_every_spelling(spec: AgentfnSpec) -> None:
    resolver = SecretResolver(spec, fetch)
    assert resolver("user=${secret:db} key=${secret:key}") == f"user={DB_SECRET} key=plain-key-1"
    assert resolver.redact(f"[{DB_SECRET}]") == f"[{REDACTED}]"
    # re-serialised another way, the object is no longer the secret's text: its members are
    echoed = json.dumps({"db": json.loads(DB_SECRET), "key": "plain-key-1"}, indent=2)
    redacted = json.loads(resolver.redact(echoed))
    assert redacted == {
        "db": {"username": "svc", "password": REDACTED, "host": REDACTED},
        "key": REDACTED,
    }
    assert resolver.redact({"nested": ["plain-key-1"]}) == {"nested": [REDACTED]}


def test_every_resolver_in_the_process_shares_what_was_resolved(
    spec: AgentfnSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine builds one resolver per model and one for tools; each must redact all."""
    monkeypatch.setenv("AGENTFN_SECRET_KEY", 'env-"override"')
    first, second = SecretResolver(spec, fetch), SecretResolver(spec, fetch)
    assert first.value("key") == 'env-"override"'
    assert second.redact('said "env-\\"override\\""') == f'said "{REDACTED}"'
    assert secrets_module.redact('env-"override"') == REDACTED
    assert first.redactor() is second.redactor() is secrets_module.redactor()


def test_the_redactor_is_rebuilt_only_for_a_new_value(spec: AgentfnSpec) -> None:
    resolver = SecretResolver(spec, fetch)
    resolver.value("key")
    before = resolver.redactor()
    resolver.value("key")
    assert resolver.redactor() is before
    resolver.value("db")
    assert resolver.redactor() is not before
    assert resolver.redact("plain-key-1 db.internal") == f"{REDACTED} {REDACTED}"


def test_nothing_is_redacted_before_anything_is_resolved(spec: AgentfnSpec) -> None:
    resolver = SecretResolver(spec, fetch)
    assert not resolver.redactor()
    assert resolver.redact("plain-key-1") == "plain-key-1"


def test_an_unreadable_secret_is_named_and_remembers_nothing(spec: AgentfnSpec) -> None:
    def failing(source: str, target: str) -> str:
        raise RuntimeError("access denied for plain-key-1")

    with pytest.raises(SecretUnavailable, match="secret 'key' could not be read from ssm") as e:
        SecretResolver(spec, failing).value("key")
    assert "plain-key-1" not in str(e.value)
    assert not secrets_module.redactor()


def _anthropic(url: str) -> AnthropicMessagesModel:
    config = AnthropicModel(
        provider="anthropic", model_id="claude-x", api_key="${secret:anthropic}", base_url=url
    )
    return AnthropicMessagesModel("claude", config, lambda reference: API_KEY)


def _error_text(server: WireServer, body: str | dict[str, object], status: int = 401) -> str:
    server.reply(body, status=status, headers={"Content-Type": "text/plain"})
    request = ModelRequest(system="s", messages=[])
    with pytest.raises(ModelError) as caught:
        asyncio.run(_anthropic(server.url).request(request))
    return str(caught.value)


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer().start()
    try:
        yield server
    finally:
        server.stop()


def test_provider_errors_hide_the_api_key_however_it_is_escaped(wire: WireServer) -> None:
    """A server echoing the key inside a JSON body the provider does not parse as an error
    object shows it JSON-escaped; the key's raw form alone would not match."""
    message = _error_text(wire, json.dumps({"detail": f"invalid key {API_KEY}"}))
    assert "anthropic answered HTTP 401" in message and REDACTED in message
    assert "back" not in message and "0123456789" not in message


def test_provider_errors_hide_a_key_cut_by_the_length_limit(wire: WireServer) -> None:
    """The error text is cut at 500 characters: redacted first, so no prefix remains."""
    body = "x" * 480 + " bad key: " + API_KEY
    message = _error_text(wire, body)
    assert "sk-ant" not in message and REDACTED[:5] in message


def test_provider_errors_hide_other_resolved_secrets(wire: WireServer, spec: AgentfnSpec) -> None:
    SecretResolver(spec, fetch).value("db")
    message = _error_text(wire, {"error": {"type": "x", "message": "db at db.internal"}}, 400)
    assert "db.internal" not in message and REDACTED in message
