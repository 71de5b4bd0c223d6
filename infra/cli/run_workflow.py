"""`agentfn run WORKFLOW INPUT`: a workflow run on the embedded AWS, its generated state
machine executing under moto exactly as deployed (each step an agent run in its agent's own
state machine). Progress goes to stderr step by step; the result to stdout.

A step run that waits for a person is decided by the flags (`--approve`, `--deny`,
`--reply`) or, on a terminal, by asking; otherwise the command says what is waiting and
exits 3 (a workflow's state machine execution ends with the process, so a workflow cannot
be resumed later — deploy, or use `agentfn dev`, for workflows that wait for people for real).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from infra.cli.run_cli import EXIT_FAILED, EXIT_NEEDS_REPLY, EXIT_OK, EXIT_USAGE
from runtime.spec import AgentfnSpec

POLL_SECONDS = 0.1


def workflow_input(spec: AgentfnSpec, name: str, words: list[str]) -> Any:
    """The input as given: text, or, for a workflow with an input_schema, a JSON object."""
    text = " ".join(words)
    if spec.workflows[name].input_schema is None:
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        example = json.dumps(schema_example(spec.workflows[name].input_schema), ensure_ascii=False)
        raise ValueError(
            f"workflow {name!r} takes a JSON object matching its input_schema, e.g. '{example}'"
        ) from None


_EXAMPLES: dict[str, Any] = {"string": "…", "integer": 1, "number": 1.0, "boolean": True}


def schema_example(schema: Any) -> Any:
    """A value of the schema's shape, for a usage hint: its required properties (or all, when
    it requires none), each as its enum's first value or an example of its type."""
    if not isinstance(schema, dict):
        return "…"
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        names = schema.get("required") or list(properties)
        return {name: schema_example(properties.get(name)) for name in names}
    if kind == "array":
        return [schema_example(schema.get("items"))]
    return _EXAMPLES.get(str(kind), "…")


def run_workflow_command(args: argparse.Namespace, spec: AgentfnSpec) -> int:
    from infra.cli.run_setup import prepare_project, stack_clients
    from infra.local.embedded_stack import EmbeddedStack
    from runtime.errors import InvalidRequest
    from runtime.workflows.service import WorkflowService

    prepare_project(args.file)  # the spec's own tools package, its .env
    try:
        given = workflow_input(spec, args.agent, args.input)
    except ValueError as exc:
        print(f"agentfn: {exc}", file=sys.stderr)
        return EXIT_USAGE
    with stack_clients(args.file, args.offline) as clients:
        stack = EmbeddedStack(spec, clients)
        workflows = WorkflowService(stack.service)
        try:
            view = workflows.start(args.agent, given)
        except InvalidRequest as exc:
            print(f"agentfn: {exc}", file=sys.stderr)
            return EXIT_USAGE
        return _follow(workflows, view["workflow_run_id"], args)


def _follow(workflows: Any, workflow_run_id: str, args: argparse.Namespace) -> int:
    shown: dict[str, str] = {}
    replies = list(args.reply)
    while True:
        view = workflows.view(workflow_run_id)
        if not args.json:
            _progress(view, shown)
        if view["status"] != "running":
            break
        waiting = _waiting_run(workflows, view)
        if waiting is not None and not _decide(workflows, waiting, args, replies):
            print(
                f"step run {waiting.run_id} ({waiting.agent}) {_what_it_waits_for(waiting)}: "
                'run the same command with --approve/--deny or --reply "…" (or in a terminal).',
                file=sys.stderr,
            )
            return EXIT_NEEDS_REPLY
        time.sleep(POLL_SECONDS)
    if getattr(args, "trace", False):
        _trace(workflows, view)
    if args.json:
        print(json.dumps(view, indent=2, ensure_ascii=False, default=str))
    elif view["status"] == "succeeded":
        value = view.get("result")
        print(value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False))
    if view["status"] == "succeeded":
        return EXIT_OK
    if not args.json:
        where = f" at step {view['failed_step']}" if view.get("failed_step") else ""
        print(
            f"workflow run {workflow_run_id} {view['status']}{where}: "
            f"{view.get('error_code')}: {view.get('error_message')}",
            file=sys.stderr,
        )
    return EXIT_FAILED


def _what_it_waits_for(head: Any) -> str:
    """`waits for approval of issue_refund {"amount": 189}` / `waits for an answer to: …`."""
    if head.status == "awaiting_input" and head.clarification is not None:
        return f"waits for an answer to: {head.clarification.question}"
    calls = "; ".join(
        f"{p.tool_name} {json.dumps(p.inputs, ensure_ascii=False)}" for p in head.pending_approval
    )
    return f"waits for approval of {calls}" if calls else "waits for a person"


def _trace(workflows: Any, view: dict[str, Any]) -> None:
    """`--trace`: each step's runs as waterfalls, in step order (infra.cli.waterfall)."""
    from infra.cli.waterfall import waterfall

    for step in view["steps"]:
        for step_run in step["runs"]:
            print(f"\n{step['id']} · {step_run['agent']}", file=sys.stderr)
            print(waterfall(workflows.engine.store, step_run["run_id"]), file=sys.stderr)


def _progress(view: dict[str, Any], shown: dict[str, str]) -> None:
    marks = {"running": "▸", "succeeded": "✓", "failed": "✗", "skipped": "·"}
    for step in view["steps"]:
        runs = ", ".join(f"{r['agent']} {r['status']}" for r in step["runs"])
        line = f"{marks.get(step['status'], ' ')} {step['id']} ({step['kind']}) {step['status']}"
        line += f": {runs}" if runs else ""
        if step["status"] != "pending" and shown.get(step["id"]) != line:
            shown[step["id"]] = line
            print(line, file=sys.stderr)


def _waiting_run(workflows: Any, view: dict[str, Any]) -> Any:
    store = workflows.engine.store
    for step in view["steps"]:
        for step_run in step["runs"]:
            if step_run["status"] in ("awaiting_approval", "awaiting_input"):
                return store.load_head(step_run["run_id"])
    return None


def _decide(workflows: Any, head: Any, args: argparse.Namespace, replies: list[str]) -> bool:
    """Decide a step run's wait from the flags, or by asking on a terminal."""
    from infra.cli.run_approvals import EVERY_CALL, undecided
    from infra.cli.run_cli import answer_from

    runs = workflows.runs
    if head.status == "awaiting_input" and head.clarification is not None:
        answer = answer_from(head.clarification.question, replies)
        if answer is None:
            return False
        runs.reply(head.run_id, answer, by="cli")
        return True
    decided = False
    for pending in undecided(head):  # --approve [TOOL] / --deny, saying what each decided
        names = args.approve or []
        if args.deny or EVERY_CALL in names or pending.tool_name in names:
            runs.approve(
                head.run_id,
                not args.deny,
                tool_call_id=pending.tool_call_id,
                reason=args.reason,
                by="cli",
            )
            verb = "denied" if args.deny else "approved"
            inputs = json.dumps(pending.inputs, ensure_ascii=False)
            print(f"  {verb} by flag: {pending.tool_name} {inputs}", file=sys.stderr)
            decided = True
    if decided:
        return True
    if not sys.stdin.isatty():
        return False
    for pending in undecided(head):
        inputs = json.dumps(pending.inputs, ensure_ascii=False)
        answer = input(f"[{head.agent}] approve {pending.tool_name} {inputs}? [y/N] ")
        runs.approve(
            head.run_id,
            answer.strip().lower() in {"y", "yes"},
            tool_call_id=pending.tool_call_id,
            by="cli",
        )
    return True
