"""`agentfn trigger AGENT_OR_WORKFLOW TRIGGER [--event FILE]`: deliver one event locally.

The event is in its service's own format — an SQS batch, an EventBridge event (S3's
`Object Created` or any other), a webhook's body, Scheduler's input — from FILE or a
built-in sample (runtime.triggers.samples, like `sam local generate-event`). It goes to the
real trigger handler (handlers/trigger.py) as AWS would deliver it: a webhook body is signed
with the trigger's secret (read as the function reads it: AGENTFN_SECRET_<NAME> locally) and
verified again; an SQS batch arrives from the trigger's queue. The run it starts is followed
and printed as `agentfn run` prints it (exit codes included).

A sample gets fresh ids on each call (a new run each time); a FILE's ids are kept, so
delivering the same FILE twice shows dedup at work: the same run again.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

EXIT_USAGE = 2
LOCAL_ACCOUNT_ARN = "arn:aws:sqs:us-east-1:123456789012:"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "trigger", help="deliver one event to a trigger locally and follow the run it starts"
    )
    p.add_argument("name", help="the agent or workflow")
    p.add_argument("trigger", help="its trigger's name")
    p.add_argument("--event", metavar="FILE", help="the event (default: a built-in sample)")
    p.add_argument("-f", "--file", default="agents.yaml")
    p.add_argument("--env", metavar="NAME", help="apply environments.NAME of the spec")
    p.add_argument("--json", action="store_true", help="print only the result JSON")
    p.add_argument("--reply", action="append", default=[], help="answer a clarification")
    decision = p.add_mutually_exclusive_group()
    decision.add_argument("--approve", action="append", nargs="?", const="*", metavar="TOOL")
    decision.add_argument("--deny", action="store_true")
    p.add_argument("--reason")
    p.add_argument("--offline", action="store_true", help="keep nothing (moto in memory)")
    p.set_defaults(func=trigger_command, trace=False)


def trigger_command(args: argparse.Namespace) -> int:
    from infra.checks.environments import selected
    from infra.checks.validate import validate_file
    from runtime.errors import InvalidRequest
    from runtime.triggers.starter import find_trigger

    result = validate_file(Path(args.file), selected(args.env))
    if not result.ok or result.spec is None:
        print("\n".join(map(str, result.issues)), file=sys.stderr)
        return EXIT_USAGE
    spec = result.spec
    try:
        owner_kind, config = find_trigger(spec, args.name, args.trigger)
    except InvalidRequest as exc:
        print(f"agentfn trigger: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        event, given = _event(args, config)
    except (OSError, ValueError) as exc:
        print(f"agentfn trigger: --event: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return _deliver(args, spec, owner_kind, config, event, given)


def _event(args: argparse.Namespace, config: Any) -> tuple[Any, bool]:
    """(the event, whether it came from --event). A sample gets fresh ids."""
    from runtime.triggers.samples import fresh, sample

    if args.event:
        text = Path(args.event).read_text("utf-8")
        return (text if config.kind == "webhook" else json.loads(text)), True
    signature = config.webhook.signature if config.webhook else None
    event: Any = sample(config.kind, signature)
    if config.kind == "queue":
        event["Records"][0]["messageId"] = fresh()
    elif config.kind in ("s3", "event"):
        event["id"] = fresh()
    elif config.kind == "webhook":
        if signature == "stripe":
            event["id"] = "evt_" + uuid.uuid4().hex
        event = json.dumps(event)
    return event, False


def _deliver(
    args: argparse.Namespace, spec: Any, owner_kind: str, config: Any, event: Any, given: bool
) -> int:
    import handlers.trigger
    from infra.cli.run_cli import follow
    from infra.cli.run_setup import prepare_project, stack_clients
    from infra.local.progress import Progress
    from runtime.engine.loop import Engine
    from runtime.secrets import SecretResolver
    from runtime.service import RunService
    from runtime.stack import Stack
    from runtime.triggers.starter import TriggerStarter, queue_name

    prepare_project(args.file)
    progress = Progress(sys.stderr, enabled=not args.json)
    secret = SecretResolver(spec.to_runtime()).value
    queue_arn = LOCAL_ACCOUNT_ARN + queue_name(args.name, args.trigger)
    with stack_clients(args.file, args.offline) as clients:
        stack = None
        if owner_kind == "workflow":  # workflows run on Step Functions: the embedded stack
            from infra.local.embedded_stack import EmbeddedStack

            stack = EmbeddedStack(spec, clients)
            runs = stack.service
        else:  # an agent's run is advanced here, as `agentfn run` advances it
            engine = Engine(spec, clients.store(), listener=progress, chunks=progress.chunk)
            runs = RunService(engine, Stack())
        starter = TriggerStarter(runs, secret)
        handlers.trigger.configure(starter, {queue_arn: (args.name, args.trigger)})
        try:
            answer = handlers.trigger.handle(_delivery(args, config, event, secret, queue_arn))
        except Exception as exc:
            print(f"agentfn trigger: the run did not start: {exc}", file=sys.stderr)
            return 1
        finally:
            handlers.trigger.configure(None)
        started = _started(answer, config, event, args, owner_kind)
        if started is None:
            print(f"agentfn trigger: the run did not start: {answer}", file=sys.stderr)
            return 1
        if not given:
            print(f"delivered a sample {config.kind} event", file=sys.stderr)
        if owner_kind == "workflow":
            from infra.cli.run_workflow import _follow
            from runtime.workflows.service import WorkflowService

            return _follow(WorkflowService(runs), started, args)
        return follow(runs.engine, started, args, progress)


def _delivery(args: argparse.Namespace, config: Any, event: Any, secret: Any, arn: str) -> Any:
    """The event as its service hands it to the trigger function."""
    from runtime.triggers.events import TARGET_KEY

    target = f"{args.name}/{args.trigger}"
    if config.kind == "queue":
        for record in event.get("Records") or []:
            record["eventSource"], record["eventSourceARN"] = "aws:sqs", arn
        return event
    if config.kind in ("s3", "event"):
        return {TARGET_KEY: target, "event": event}
    if config.kind == "schedule":
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {TARGET_KEY: target, "time": (event or {}).get("time") or now}
    return _webhook_event(args, config, str(event), secret)


def _webhook_event(args: argparse.Namespace, config: Any, body: str, secret: Any) -> Any:
    from runtime.spec.shared import secret_names
    from runtime.triggers.signatures import sign

    hook = config.webhook
    headers = {"Content-Type": "application/json"}
    key = secret(secret_names(hook.secret)[0])
    headers.update(sign(hook.signature, key, body.encode(), header=hook.header))
    if hook.signature == "github" or hook.id_header:
        headers[hook.id_header or "X-GitHub-Delivery"] = str(uuid.uuid4())
    return {
        "httpMethod": "POST",
        "path": f"/hooks/{args.name}/{args.trigger}",
        "pathParameters": {"agent": args.name, "trigger": args.trigger},
        "headers": headers,
        "body": body,
        "isBase64Encoded": False,
        "requestContext": {"requestId": str(uuid.uuid4())},
    }


def _started(answer: Any, config: Any, event: Any, args: argparse.Namespace, kind: str) -> Any:
    """The id of the run the delivery started (or found), None when it did not start."""
    from runtime.triggers.starter import run_id_for

    if config.kind == "queue":
        if answer.get("batchItemFailures"):
            return None
        first = (event.get("Records") or [{}])[0]
        return run_id_for(kind, args.name, args.trigger, str(first.get("messageId")))
    if "statusCode" in answer:
        body = json.loads(answer["body"])
        return (
            body.get("run_id") or body.get("workflow_run_id")
            if answer["statusCode"] == 202
            else None
        )
    return answer.get("run_id") or answer.get("workflow_run_id")
