"""Step Functions task entry point of a workflow's function (contract: infra/sam/workflow_asl.py).

One function per workflow serves every task of its state machine by `action` (`plan`,
`run_item`, `recheck`, `collect`, `finish`, `fail`); it may start runs of its steps' agents
only (its role says the same). Everything heavy is built on the first invocation.
"""

from __future__ import annotations

import os
from typing import Any

_service: Any = None
MAX_ERROR_CHARS = 1000


class StepFailed(Exception):
    """An unexpected error in a task, its message cut short for the execution's state."""


def configure(service: Any) -> None:
    """Use this WorkflowService instead of building one from the environment."""
    global _service
    _service = service


def build_service_from_environment() -> Any:
    from handlers.step import build_service_from_environment as run_service
    from runtime.workflows.service import WorkflowService

    return WorkflowService(run_service(), workflow=os.environ.get("AGENTFN_WORKFLOW") or None)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    global _service
    from handlers import observe

    with observe.invocation(context, str(event.get("workflow_run_id") or "")):
        if _service is None:
            _service = build_service_from_environment()
        return handle(_service, event)


def handler_for(service: Any) -> Any:
    """A handler bound to this WorkflowService (the embedded stack)."""
    return lambda event, context: handle(service, event)


def handle(service: Any, event: dict[str, Any]) -> dict[str, Any]:
    import logging

    try:
        result: dict[str, Any] = service.task(event)
    except Exception as exc:
        logging.getLogger("agentfn.workflow").exception("task %.40s failed", event.get("action"))
        raise StepFailed(f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]) from None
    return result


if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start":  # deployment.snapstart
    from handlers import snapshot

    if snapshot.at_init(__name__):
        _service = snapshot.prepare(build_service_from_environment)
