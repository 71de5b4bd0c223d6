"""`agentfn run`: one run in process, on the embedded AWS (or real AWS with --aws).

Live progress goes to stderr (each step, each tool call with its duration and success,
token counts); stdout carries only the answer, or with --json only the result contract.
Exit codes: 0 succeeded, 1 failed or cancelled, 2 usage or spec errors, 3 waiting for a
reply that was not given.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from runtime.events import Event
from runtime.spec import AgentfnSpec

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NEEDS_REPLY = 0, 1, 2, 3


class Progress:
    """Renders events as they are committed."""

    def __init__(self, stream: TextIO, enabled: bool):
        self.stream = stream
        self.enabled = enabled

    def __call__(self, event: Event) -> None:
        if not self.enabled:
            return
        line = self._line(event)
        if line is not None:
            print(line, file=self.stream, flush=True)

    def _line(self, event: Event) -> str | None:
        d = event.data
        if event.type == "run_started":
            return f"▶ {d['agent']} · session {d['session_id'][:12]}"
        if event.type == "model_response":
            usage = d.get("usage", {})
            tokens = f"{usage.get('input_tokens', 0)}→{usage.get('output_tokens', 0)} tokens"
            head = f"  step {d['turn']} · {d['model']} · {tokens}"
            if d.get("stop_reason") == "max_tokens":
                head += " · cut off at the token limit"
            text = (d.get("text") or "").strip()
            if text and d.get("tool_calls"):
                head += "\n    " + text.replace("\n", "\n    ")
            return head
        if event.type == "tool_result":
            mark = "✓" if d["success"] else "✗"
            detail = "" if d["success"] else f" · {d['output'][:160]}"
            return f"    {mark} {d['tool_name']} · {d['duration_ms']} ms{detail}"
        if event.type == "clarification_requested":
            return f"  ? {d['question']}"
        if event.type == "clarification_answered":
            return "  ↳ answered"
        if event.type == "approval_requested":
            calls = ", ".join(c["tool_name"] for c in d["calls"])
            return f"  ⏸ waiting for approval: {calls}"
        if event.type == "approval_decided":
            verdict = "timed out" if d["timed_out"] else "approved" if d["approved"] else "rejected"
            return f"  ↳ {verdict}" + (f" ({d['reason']})" if d.get("reason") else "")
        if event.type == "run_completed":
            tokens = f"{d['tokens_input']} in / {d['tokens_output']} out tokens"
            return f"✓ succeeded in {d['turns_used']} turns · {tokens}"
        if event.type == "run_failed":
            return f"✗ {d['error_code']}: {d['error_message']}"
        return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agent")
    parser.add_argument("input", nargs="+", help="the user's message")
    parser.add_argument("-f", "--file", default="agents.yaml")
    parser.add_argument("--session", help="continue this session (earlier runs' history)")
    parser.add_argument("--json", action="store_true", help="print only the result JSON")
    parser.add_argument(
        "--reply", action="append", default=[], help="answer a clarification question (repeatable)"
    )
    decision = parser.add_mutually_exclusive_group()
    decision.add_argument(
        "--approve", action="store_true", help="approve every tool call that needs approval"
    )
    decision.add_argument("--deny", action="store_true", help="reject them (the model is told)")
    parser.add_argument("--reason", help="the reason given with --approve/--deny")
    parser.add_argument(
        "--aws", action="store_true", help="use real AWS (AGENTFN_TABLE, AGENTFN_BUCKET)"
    )


def _print_result(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
        return
    if result["status"] == "succeeded":
        value = result.get("result")
        print(value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False))


def run_command(args: argparse.Namespace, spec: AgentfnSpec) -> int:
    from infra.local import embedded_aws, real_aws
    from runtime.engine.loop import Engine

    project = str(Path(args.file).resolve().parent)
    if project not in sys.path:
        sys.path.insert(0, project)  # the spec's own tools package
    progress = Progress(sys.stderr, enabled=not args.json)
    text = " ".join(args.input)
    if args.aws:
        return _drive(Engine(spec, real_aws().store(), listener=progress), args, text)
    with embedded_aws() as clients:
        return _drive(Engine(spec, clients.store(), listener=progress), args, text)


def _drive(engine: Any, args: argparse.Namespace, text: str) -> int:
    replies = list(args.reply)
    head = engine.start(args.agent, text, args.session)
    try:
        while True:
            head = asyncio.run(engine.advance(head.run_id))
            if head.status == "awaiting_input" and head.clarification is not None:
                answer = _answer(head.clarification.question, replies)
                if answer is None:
                    _print_result(engine.result(head.run_id), args.json)
                    print(
                        f"The agent asks: {head.clarification.question}\n"
                        'Answer it by running the same command with --reply "…" '
                        "(or run it in a terminal to be asked).",
                        file=sys.stderr,
                    )
                    return EXIT_NEEDS_REPLY
                head = engine.reply(head.run_id, answer)
            elif head.status == "awaiting_approval":
                if not _decide(engine, head, args):
                    _print_result(engine.result(head.run_id), args.json)
                    calls = ", ".join(p.tool_name for p in head.pending_approval)
                    print(
                        f"Waiting for approval of: {calls}. Run the same command with "
                        "--approve or --deny [--reason …] (or in a terminal to be asked).",
                        file=sys.stderr,
                    )
                    return EXIT_NEEDS_REPLY
            else:
                break
    except KeyboardInterrupt:
        engine.cancel(head.run_id, "interrupted")
        raise
    except Exception as exc:  # a bug must still leave a failed run with its error contract
        head = engine.force_fail(head.run_id, "INTERNAL", f"{type(exc).__name__}: {exc}")
    result = engine.result(head.run_id)
    _print_result(result, args.json)
    if head.status == "succeeded":
        return EXIT_OK
    if not args.json:
        print(
            f"run {head.run_id} {head.status}: "
            f"{result.get('error_code')}: {result.get('error_message')}",
            file=sys.stderr,
        )
    return EXIT_FAILED


def _decide(engine: Any, head: Any, args: argparse.Namespace) -> bool:
    """Decide every pending call from the flags or, on a terminal, by asking. False: no one
    can decide here."""
    if args.approve or args.deny:
        engine.decide(head.run_id, approved=bool(args.approve), reason=args.reason)
        return True
    if not sys.stdin.isatty():
        return False
    for pending in head.pending_approval:
        inputs = json.dumps(pending.inputs, ensure_ascii=False)
        try:
            answer = input(f"Approve {pending.tool_name} {inputs}? [y/N] ").strip().lower()
        except EOFError:
            return False
        engine.decide(
            head.run_id, approved=answer in {"y", "yes"}, tool_call_id=pending.tool_call_id
        )
    return True


def _answer(question: str, replies: list[str]) -> str | None:
    if replies:
        return replies.pop(0)
    if sys.stdin.isatty():
        try:
            return input(f"{question}\n> ")
        except EOFError:
            return None
    return None
