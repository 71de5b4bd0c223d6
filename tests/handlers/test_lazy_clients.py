"""A cold start makes only the AWS clients its step uses (handlers.clients).

The step function's service is built from its environment as deployed; a one-step run that
finishes reads and writes DynamoDB and tells EventBridge it finished: those two clients are
made, Step Functions, Lambda and S3 are not (each costs 15-90 ms to make).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import handlers.step
from infra.local.aws import LOCAL_BUCKET, LOCAL_TABLE, embedded_aws
from runtime.engine.loop import Engine
from runtime.spec import AgentfnSpec

SPEC = {
    "version": 1,
    "models": {"m": {"provider": "scripted", "script": [{"text": "done"}]}},
    "agents": {"a": {"description": "One step.", "model": "m"}},
}


def test_a_first_invocation_makes_only_the_clients_its_step_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = AgentfnSpec.model_validate(SPEC)
    path = tmp_path / "agentfn.spec.json"
    path.write_text(json.dumps(spec.to_compiled()))
    with embedded_aws() as clients:
        for key, value in {
            "AGENTFN_SPEC_PATH": str(path),
            "AGENTFN_AGENT": "a",
            "AGENTFN_TABLE": LOCAL_TABLE,
            "AGENTFN_BUCKET": LOCAL_BUCKET,
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(key, value)
        run_id = Engine(spec, clients.store()).start("a", "go").run_id
        service = handlers.step.build_service_from_environment()
        assert not any(c.made for c in _clients(service).values())  # nothing at start
        handlers.step.configure(service)
        try:
            answer = handlers.step.handler({"action": "advance", "run_id": run_id}, None)
        finally:
            handlers.step.configure(None)
    assert answer["status"] == "succeeded"
    made = {name for name, client in _clients(service).items() if client.made}
    assert made == {"dynamodb", "events"}


def _clients(service: Any) -> dict[str, Any]:
    store = service.engine.store
    found = [store._ddb, store.blobs._s3, service.sfn, service.lambda_client, service.events]
    return {client.service: client for client in found}
