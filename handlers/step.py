"""Step Functions task entry point of an agent's function (contract: infra/sam/asl.py).

One function per agent serves every task of its state machine by `action`: `advance`,
`wait`, `timeout`, `continue`, `fail`. Everything heavy is built on the first invocation and
reused while the container is warm; importing this module costs almost nothing.

`RunLeased` is raised on purpose: the state machine retries it (another worker, or a
crashed one whose lease has not run out, holds the run). Any other error is raised with a
short message (`StepFailed`): an error's cause lands in the execution's state, which must
stay small. A request for another agent's run is refused without touching it.
"""

from __future__ import annotations

import logging
import os
from typing import Any

_service: Any = None
_publisher: Any = None  # runtime.live.live_ws.WebSocketPublisher, when the stack has live runs


def configure(service: Any) -> None:
    """Use this RunService instead of building one from the environment (`agentfn dev`)."""
    global _service
    _service = service


def build_service_from_environment() -> Any:
    """The RunService of this function; its AWS clients are made when a step first uses
    them (handlers.clients), so a cold start pays only for those it needs."""
    from handlers import observe
    from handlers.clients import LazyClient
    from runtime.engine.loop import Engine
    from runtime.secrets import protect_logs
    from runtime.service import RunService
    from runtime.spec.plain import load_compiled
    from runtime.stack import Stack
    from runtime.store.dynamo import DynamoStore, S3Blobs

    protect_logs()  # no resolved secret reaches the function's log
    root = os.environ.get("LAMBDA_TASK_ROOT", ".")
    spec = load_compiled(
        os.environ.get("AGENTFN_SPEC_PATH", os.path.join(root, "agentfn.spec.json"))
    )
    store = DynamoStore(
        LazyClient("dynamodb"),
        os.environ["AGENTFN_TABLE"],
        S3Blobs(LazyClient("s3"), os.environ["AGENTFN_BUCKET"]),
    )
    stack = Stack(
        function_prefix=os.environ.get("AGENTFN_FUNCTION_PREFIX", ""),
        state_machine_prefix=os.environ.get("AGENTFN_STATE_MACHINE_PREFIX", ""),
        event_bus=os.environ.get("AGENTFN_EVENT_BUS", "default"),
        function_alias=os.environ.get("AGENTFN_FUNCTION_ALIAS", ""),
    )
    agent = os.environ.get("AGENTFN_AGENT") or None
    watch: dict[str, Any] = {"listener": observe.listener(store)}  # metrics
    endpoint = os.environ.get("AGENTFN_LIVE_ENDPOINT")
    if endpoint:  # watchers on the WebSocket API get every event and the streamed text
        global _publisher
        from runtime.live.live_ws import WebSocketPublisher

        management = LazyClient("apigatewaymanagementapi", endpoint_url=endpoint)
        _publisher = WebSocketPublisher(
            LazyClient("dynamodb"), os.environ["AGENTFN_TABLE"], management
        )
        metrics = watch["listener"]
        watch = {"listener": lambda e: (metrics(e), _publisher.on_event(e)),
                 "chunks": _publisher.on_chunk}  # fmt: skip
    return RunService(
        Engine(spec, store, scope=agent, **watch),
        stack,
        sfn=LazyClient("stepfunctions"),
        lambda_client=LazyClient("lambda"),
        events=LazyClient("events"),
        agent=agent,
    )


def flush_live() -> None:
    """Posts what live watchers are still owed (runtime.live.live_ws): a returned invocation is
    frozen, so every function that advances or ends runs calls this before it returns."""
    if _publisher is not None:
        _publisher.flush()


class StepFailed(Exception):
    """An unexpected error in a task, its message cut short for the execution's state."""


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    global _service
    from handlers import observe  # here, not at import: the cold start's import stays small

    with observe.invocation(context, str(event.get("run_id") or "")):  # logs keys, metrics
        if _service is None:
            _service = build_service_from_environment()
        try:
            result = _handle(_service, event, context)
        finally:
            flush_live()
        action = str(event.get("action", "advance"))[:40]
        logging.getLogger("agentfn.step").info("task %s: run %s", action, result.get("status"))
        return result


def handler_for(service: Any) -> Any:
    """A handler bound to this RunService (the embedded stack: one per agent function)."""
    return lambda event, context: _handle(service, event, context)


def with_defaults(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The task's event with what the state machine's first task (`Start`, infra/sam/asl.py)
    leaves out: no advance has run yet in this execution (`loops` 0), and the run is in this
    function (`function`: the ARN it was invoked by). A Pass state used to set these, one
    transition in four of a run without pauses."""
    event = dict(event)
    if event.get("loops") is None:
        event["loops"] = 0
    if not event.get("function"):
        event["function"] = getattr(context, "invoked_function_arn", "") or ""
    return event


def _handle(service: Any, event: dict[str, Any], context: Any) -> dict[str, Any]:
    from runtime.errors import RunLeased

    event = with_defaults(event, context)
    remaining = context.get_remaining_time_in_millis() / 1000 if context else 900.0
    try:
        result: dict[str, Any] = service.step(event, remaining)
    except RunLeased:
        raise
    except Exception as exc:
        logging.getLogger("agentfn.step").exception("task %.40s failed", event.get("action"))
        message = f"{type(exc).__name__}: {exc}"
        raise StepFailed(message[:MAX_ERROR_CHARS]) from None
    return result


MAX_ERROR_CHARS = 1000

if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start":  # deployment.snapstart
    from handlers import snapshot

    if snapshot.at_init(__name__):
        _service = snapshot.prepare(build_service_from_environment)
