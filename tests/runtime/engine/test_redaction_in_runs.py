"""Secrets never reach what a run commits or logs, in any spelling: a tool that echoes a
resolved secret (raw, JSON-escaped, inside JSON) leaves no trace of it in the store, the
events, the result or the function's log."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator

import pytest

import runtime.secrets as secrets_module
from runtime.secrets import SecretResolver, protect_logs
from runtime.spec import AgentfnSpec
from tests.runtime.engine.kit import call, make_spec, new_engine

SECRET = 'p"a\\ss-w0rd!'


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    secrets_module.forget_all()
    yield
    secrets_module.forget_all()


def _spec() -> AgentfnSpec:
    leaky = [
        call("echo", {"text": f"raw {SECRET}"}, id="e1"),
        call("echo", {"text": "json " + json.dumps({"k": SECRET})}, id="e2"),
    ]
    data = make_spec([{"tool_calls": leaky}, {"text": f"done {SECRET}"}], tools=["echo"])
    spec = data.model_dump(mode="json", by_alias=True)
    spec["secrets"] = {"db": {"source": "ssm"}}
    return AgentfnSpec.model_validate(spec)


def test_a_resolved_secret_is_absent_from_everything_a_run_commits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = _spec()
    monkeypatch.setenv("AGENTFN_SECRET_DB", SECRET)
    assert SecretResolver(spec)("${secret:db}") == SECRET  # resolved once in this process
    engine = new_engine(spec)
    head = asyncio.run(engine.run("a", "go"))
    assert head.status == "succeeded"
    stored = json.dumps(list(engine.store.items.values()))
    stored += "".join(b.decode() for b in engine.store.blobs.objects.values())
    result = json.dumps(engine.result(head.run_id))
    for text in (stored, result):
        assert SECRET not in text
        assert json.dumps(SECRET)[1:-1] not in text  # the JSON-escaped spelling
        assert json.dumps(json.dumps(SECRET))[1:-1] not in text  # escaped twice
        assert "[redacted]" in text


def test_protected_logs_never_print_a_resolved_secret(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("AGENTFN_SECRET_DB", SECRET)
    SecretResolver(_spec()).value("db")
    root = logging.getLogger()
    protect_logs(root)  # the function's handlers (here: pytest's capture handler)
    protect_logs(root)  # idempotent
    try:
        logging.getLogger("agentfn.test").warning("calling with %s", json.dumps({"pw": SECRET}))
    finally:
        for handler in root.handlers:
            handler.filters = [f for f in handler.filters if "Redacting" not in type(f).__name__]
    assert SECRET not in caplog.text and json.dumps(SECRET)[1:-1] not in caplog.text
    assert "[redacted]" in caplog.text
