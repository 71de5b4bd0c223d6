"""Step Functions task entry point of an agent's function (contract: infra/sam/asl.py).

One function per agent serves every task of its state machine by `action`: `advance`,
`wait`, `timeout`, `result`, `fail`. Everything heavy is built on the first invocation and
reused while the container is warm; importing this module costs almost nothing.

`RunLeased` is raised on purpose: the state machine retries it (another worker, or a
crashed one whose lease has not run out, holds the run).
"""

from __future__ import annotations

import json
import os
from typing import Any

_service: Any = None


def configure(service: Any) -> None:
    """Use this RunService instead of building one from the environment (`agentfn dev`)."""
    global _service
    _service = service


def build_service_from_environment() -> Any:
    import boto3

    from runtime.engine.loop import Engine
    from runtime.service import RunService, Stack
    from runtime.spec import load_compiled
    from runtime.store.dynamo import DynamoStore, S3Blobs

    root = os.environ.get("LAMBDA_TASK_ROOT", ".")
    spec = load_compiled(
        os.environ.get("AGENTFN_SPEC_PATH", os.path.join(root, "agentfn.spec.json"))
    )
    store = DynamoStore(
        boto3.client("dynamodb"),
        os.environ["AGENTFN_TABLE"],
        S3Blobs(boto3.client("s3"), os.environ["AGENTFN_BUCKET"]),
    )
    stack = Stack(
        state_machines=json.loads(os.environ.get("AGENTFN_STATE_MACHINES", "{}")),
        agent_functions=json.loads(os.environ.get("AGENTFN_AGENT_FUNCTIONS", "{}")),
        event_bus=os.environ.get("AGENTFN_EVENT_BUS", "default"),
    )
    return RunService(
        Engine(spec, store),
        stack,
        sfn=boto3.client("stepfunctions"),
        lambda_client=boto3.client("lambda"),
        events=boto3.client("events"),
    )


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    global _service
    if _service is None:
        _service = build_service_from_environment()
    from runtime.errors import InvalidRequest

    remaining = context.get_remaining_time_in_millis() / 1000 if context else 900.0
    try:
        result: dict[str, Any] = _service.step(event, remaining)
    except InvalidRequest as exc:
        return {
            "run_id": event.get("run_id"),
            "status": "failed",
            "wait_seconds": 0,
            "error_code": "BAD_REQUEST",
            "error_message": str(exc),
        }
    return result
