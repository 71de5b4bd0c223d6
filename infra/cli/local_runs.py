"""Runs that `agentfn run` left in the local state, answered without any server.

`agentfn status|events|approve|reply|cancel RUN_ID` come here when no `--url` (nor
AGENTFN_URL) is given and the run is in the local state beside the spec (`-f`,
infra.local.local_state); otherwise they talk to an HTTP API as before (`agentfn dev`, a
deployed stage). `approve` and `reply` then resume the run in this process where it
stopped: the run's history is in the table, so tools already called are not called again;
a workflow's step run resumes its workflow (infra.local.takeover). While `agentfn dev`
serves the local state, they ask dev instead (infra.local.dev_state).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from infra.cli.run_setup import prepare_project
from infra.local.local_state import LOG_NAME, state_dir
from runtime.errors import AgentfnError, RunNotFound

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def wants_local(args: argparse.Namespace) -> bool:
    """No URL was asked for, and `agentfn run` has kept state beside the spec. While an
    `agentfn dev` serves that state, the command goes to its API instead (`args.url`): its
    executions wait on the runs it started (infra.local.dev_state)."""
    from infra.cli.api_base import DEFAULT_URL
    from infra.local.dev_state import holder

    if os.environ.get("AGENTFN_URL") or args.url != DEFAULT_URL:
        return False
    directory = state_dir(args.file)
    dev = holder(directory)
    if dev is not None:
        args.url = dev
        return False
    return (directory / LOG_NAME).exists()


def answer_locally(args: argparse.Namespace) -> int | None:
    """The command answered from the local state, or None (then over HTTP, as before)."""
    return run_local(args.command, args) if wants_local(args) else None


def run_local(name: str, args: argparse.Namespace) -> int | None:
    """The command answered from the local state; None when the run is not there (the
    caller then asks `agentfn dev` as before)."""
    from infra.cli.api_views import describe, event_line
    from infra.cli.run_cli import follow
    from infra.cli.spec_files import load as _load
    from infra.local.aws import local_aws
    from infra.local.progress import Progress
    from runtime.engine.loop import Engine

    spec = _load(args.file)
    if spec is None:
        return EXIT_USAGE
    prepare_project(args.file)
    progress = Progress(sys.stderr, enabled=not args.json)
    with local_aws(state_dir(args.file)) as clients:
        engine = Engine(spec, clients.store(), listener=progress)
        try:
            head = engine.store.load_head(args.run_id)
        except RunNotFound:
            return None
        if head.workflow_run_id and name in {"approve", "reply"}:  # its workflow goes on
            return decide_step_run(name, args, spec, clients)
        progress.run_id = _root(engine, head).run_id
        try:
            if name == "status":
                _show(engine, args.run_id, args.json, describe)
                return EXIT_OK
            if name == "events":
                return _events(engine, args, event_line)
            if name == "cancel":
                engine.cancel(args.run_id, "cancelled by request", by="cli")
                _show(engine, args.run_id, args.json, describe)
                return EXIT_OK
            if name == "approve":
                from infra.cli.api_base import edited_inputs

                edited = edited_inputs(args)
                engine.decide(
                    args.run_id,
                    approved=not args.deny,
                    tool_call_id=args.tool_call_id,
                    reason=args.reason,
                    edited_inputs=edited,
                    by="cli",
                )
            elif name == "reply":
                engine.reply(args.run_id, " ".join(args.text), by="cli")
        except AgentfnError as exc:
            print(f"agentfn {name}: {exc}", file=sys.stderr)
            return EXIT_ERROR
        resume = argparse.Namespace(json=args.json, reply=[], approve=None, deny=False, reason=None)
        return follow(engine, _root(engine, head).run_id, resume, progress)


def _root(engine: Any, head: Any) -> Any:
    """The run a person's answer resumes: a child's top-most parent (it drives its children)."""
    while head.parent_run_id:
        head = engine.store.load_head(head.parent_run_id)
    return head


def _show(engine: Any, run_id: str, as_json: bool, describe: Any) -> None:
    import json

    result = engine.result(run_id)
    text = json.dumps(result, indent=2, ensure_ascii=False, default=str)
    print(text if as_json else describe(result))


def _events(engine: Any, args: argparse.Namespace, event_line: Any) -> int:
    import json

    from runtime.structs import dump

    after = args.after
    while True:
        events = engine.store.list_events(args.run_id, after=after)
        for event in events:
            data = dump(event)
            print(json.dumps(data, ensure_ascii=False) if args.json else event_line(data))
        if not events:
            return EXIT_OK
        after = events[-1].seq


def decide_step_run(name: str, args: argparse.Namespace, spec: Any, clients: Any) -> int:
    """`agentfn approve|reply RUN_ID` on a workflow's step run that `agentfn run` left
    waiting: the decision is recorded, the workflow re-enters its state machine here
    (take_over) and is followed to its end, or to the next wait (exit 3)."""
    from infra.cli.api_base import edited_inputs
    from infra.cli.run_cli import EXIT_FAILED
    from infra.cli.run_workflow import _follow
    from infra.local.embedded_stack import EmbeddedStack
    from infra.local.progress import Progress
    from runtime.errors import AgentfnError
    from runtime.workflows.service import WorkflowService

    progress = Progress(sys.stderr, enabled=not args.json)
    stack = EmbeddedStack(spec, clients, engine_options={"listener": progress})
    service = stack.service
    head = service.engine.store.load_head(args.run_id)
    try:
        if name == "approve":
            service.approve(
                args.run_id,
                not args.deny,
                tool_call_id=args.tool_call_id,
                reason=args.reason,
                edited_inputs=edited_inputs(args),
                by="cli",
            )
        else:
            service.reply(args.run_id, " ".join(args.text), by="cli")
    except AgentfnError as exc:
        print(f"agentfn {name}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    resume = argparse.Namespace(
        json=args.json, reply=[], approve=None, deny=False, reason=None, offline=False
    )
    assert head.workflow_run_id is not None
    return _follow(WorkflowService(service), head.workflow_run_id, resume)
