"""The embedded stack the API tests talk to (module-scoped: one per test module), and the
embedded AWS the live-run tests talk to (`aws`: per test, with the stack's watch key)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from infra.local.aws import LOCAL_REGION, embedded_aws
from infra.local.embedded_stack import EmbeddedStack
from runtime.spec import AgentfnSpec
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def stack(demo_spec: AgentfnSpec) -> Iterator[EmbeddedStack]:
    import handlers.api
    import handlers.step

    with embedded_aws() as clients:
        embedded = EmbeddedStack(demo_spec, clients, template_path=ROOT / "template.yaml")
        embedded.serve_api()
        try:
            yield embedded
        finally:
            handlers.api.configure(None)
            handlers.step.configure(None)


LIVE_ENDPOINT = "https://abc123.execute-api.us-east-1.amazonaws.com/live"


@pytest.fixture()
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    import secrets

    import handlers.live
    from runtime.live import watch_token

    with embedded_aws() as clients:
        monkeypatch.setenv("AGENTFN_TABLE", clients.table)
        monkeypatch.setenv("AGENTFN_BUCKET", clients.bucket)
        monkeypatch.setenv("AWS_DEFAULT_REGION", LOCAL_REGION)
        monkeypatch.setenv("AGENTFN_LIVE_ENDPOINT", LIVE_ENDPOINT)
        # the stack's watch key, as the template's generated secret holds it
        manager = boto3.client("secretsmanager", region_name=LOCAL_REGION)
        key = manager.create_secret(Name="watch-key", SecretString=secrets.token_urlsafe(48))
        monkeypatch.setenv(watch_token.KEY_SECRET_ENV, key["ARN"])
        handlers.live._clients.clear()
        watch_token._cached.clear()
        yield clients
        handlers.live._clients.clear()
        watch_token._cached.clear()
