"""The trigger function: schedules, webhooks, queues, S3 uploads and events into runs.

One small function for the stack (infra/sam/triggers.py), present only when a spec declares
triggers. It serves three shapes of event, each in its service's own format, and hands each
to runtime.triggers.starter.TriggerStarter, which starts runs through the same
RunService.start the API uses (the event's id is the idempotency key):

- API Gateway proxy events of `POST /hooks/{agent}/{trigger}` (no IAM auth: the signature
  is checked with the trigger's secret; 401 without a valid one);
- SQS batches (event source mappings with ReportBatchItemFailures): the messages whose run
  did not start are returned, retried by SQS, then parked in the dead-letter queue;
- the input of Scheduler schedules and EventBridge rules (`{"agentfn_trigger": …}`).

Its role may start runs only of the agents and workflows that declare triggers. Importing
it loads the standard library only; the engine and boto3 load on the first event.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

_starter: Any = None
_queues: dict[str, tuple[str, str]] | None = None
QUEUE_PREFIX_ENV = "AGENTFN_TRIGGER_QUEUE_PREFIX"


def configure(starter: Any, queues: dict[str, tuple[str, str]] | None = None) -> None:
    """Use this TriggerStarter (and queue map) instead of building one from the environment
    (the embedded stack, the tests); None: back to the environment's."""
    global _starter, _queues
    _starter, _queues = starter, queues


def _built() -> tuple[Any, dict[str, tuple[str, str]]]:
    global _starter, _queues
    if _starter is None:
        from handlers.step import build_service_from_environment
        from runtime.secrets import SecretResolver
        from runtime.triggers.starter import TriggerStarter

        runs = build_service_from_environment()
        _starter = TriggerStarter(runs, SecretResolver(runs.engine.spec).value)
    if _queues is None:
        from runtime.triggers.starter import queue_targets

        _queues = queue_targets(_starter.spec, os.environ.get(QUEUE_PREFIX_ENV, ""))
    return _starter, _queues


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from handlers import observe

    with observe.invocation(context):
        return handle(event)


def handle(event: dict[str, Any]) -> dict[str, Any]:
    starter, queues = _built()
    if "httpMethod" in event:
        return webhook(starter, event)
    records = event.get("Records")
    if isinstance(records, list) and records and records[0].get("eventSource") == "aws:sqs":
        answer: dict[str, Any] = starter.sqs(event, queues)
        return answer
    if "agentfn_trigger" in event:
        status, body = starter.target(event)
        return {"status": status, **{k: body.get(k) for k in ("run_id", "workflow_run_id")}}
    raise ValueError("not an event the trigger function serves")


def webhook(starter: Any, event: dict[str, Any]) -> dict[str, Any]:
    """An API Gateway proxy event → its proxy answer."""
    from runtime.errors import InvalidRequest

    params = event.get("pathParameters") or {}
    body_text = event.get("body") or ""
    raw = base64.b64decode(body_text) if event.get("isBase64Encoded") else body_text.encode()
    headers = {str(k): str(v) for k, v in (event.get("headers") or {}).items()}
    request_id = str((event.get("requestContext") or {}).get("requestId") or "")
    try:
        status, body = starter.webhook(
            str(params.get("agent") or ""), str(params.get("trigger") or ""), raw, headers,
            request_id,
        )  # fmt: skip
    except InvalidRequest as exc:
        status = 404 if exc.not_found else 400
        body = {"error_code": exc.error_code, "error_message": str(exc), "field": exc.field}
    except Exception:  # logged; the sender retries a 5xx, and learns nothing of the cause
        import logging

        logging.getLogger("agentfn.triggers").exception("webhook failed")
        status, body = 500, {"error_code": "INTERNAL", "error_message": "internal error"}
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(body, default=str),
    }
