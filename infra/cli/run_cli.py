"""`agentfn run`: one run in process, on the embedded AWS (or real AWS with --aws).

Live progress goes to stderr (each step, each tool call with its duration and success,
token counts, and on a terminal the model's text as it streams); stdout carries only the
answer — not again when stdout is the terminal it just streamed to — or with --json only
the result contract.
Exit codes: 0 succeeded, 1 failed or cancelled, 2 usage or spec errors, 3 waiting for a
reply that was not given, 143 stopped by SIGTERM (130 for Ctrl-C, from the CLI).

SIGTERM (`kill`, a service manager, a CI job's timeout) stops a run the way Ctrl-C does: the
advance is interrupted, its MCP toolset closes, which stops every stdio server the run
started (they run in sessions of their own, so no signal sent to agentfn reaches them),
and the run is recorded as cancelled.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from infra.local.progress import Progress
from runtime.spec import AgentfnSpec
from runtime.teams import waiting_for_a_person
from runtime.tools.threads import run_loop

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NEEDS_REPLY = 0, 1, 2, 3
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's KeyboardInterrupt would be, and handled the same way."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises `Terminated` in the main thread, as SIGINT raises
    KeyboardInterrupt: `run_loop` then cancels the advance and waits for its cleanup."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agent", help="an agent, or a workflow")
    parser.add_argument(
        "input", nargs="+", help="the user's message (a workflow's: its JSON input, or text)"
    )
    parser.add_argument("-f", "--file", default="agents.yaml")
    parser.add_argument("--session", help="continue this session (earlier runs' history)")
    parser.add_argument("--json", action="store_true", help="print only the result JSON")
    parser.add_argument(
        "--reply", action="append", default=[], help="answer a clarification question (repeatable)"
    )
    decision = parser.add_mutually_exclusive_group()
    decision.add_argument(
        "--approve",
        action="append",
        nargs="?",
        const="*",
        metavar="TOOL",
        help="approve the calls of TOOL that need approval (repeatable); without TOOL, "
        "every such call (each one approved is printed)",
    )
    decision.add_argument("--deny", action="store_true", help="reject them (the model is told)")
    parser.add_argument("--reason", help="the reason given with --approve/--deny")
    parser.add_argument(
        "--aws", action="store_true", help="use real AWS (AGENTFN_TABLE, AGENTFN_BUCKET)"
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        default=os.environ.get("AGENTFN_OFFLINE", "") not in {"", "0"},
        help="emulate every AWS call (models, tools, secrets too) in memory, keep nothing "
        "(CI; also AGENTFN_OFFLINE=1)",
    )
    parser.add_argument(
        "--trace", action="store_true", help="print a waterfall of the run at the end (stderr)"
    )
    parser.add_argument(
        "--max-turns", type=int, metavar="N", help="this run's turn limit (≤ the agent's own)"
    )


def _print_result(result: dict[str, Any], as_json: bool, progress: Progress | None = None) -> None:
    if as_json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
        return
    if result["status"] == "succeeded":
        value = result.get("result")
        if progress is not None and _same_terminal() and progress.streamed(value):
            return  # the answer is on this terminal already, as it streamed
        print(value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False))


def _is_terminal(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _same_terminal() -> bool:
    """Whether stdout and stderr are one terminal (the answer streamed there already)."""
    if not (_is_terminal(1) and _is_terminal(2)):
        return False
    try:
        return os.ttyname(1) == os.ttyname(2)
    except OSError:
        return False


def run_command(args: argparse.Namespace, spec: AgentfnSpec) -> int:
    from infra.cli.run_setup import prepare_project, stack_clients
    from infra.local.aws import real_aws
    from runtime.engine.loop import Engine

    prepare_project(args.file)
    # The answer streams with the progress, to a terminal; stdout still gets it whole at the
    # end, unless stdout is that same terminal (where it was just written).
    live = sys.stderr if _is_terminal(2) else None
    progress = Progress(sys.stderr, enabled=not args.json, live=live)
    watch: dict[str, Any] = {"listener": progress, "chunks": progress.chunk}
    text = " ".join(args.input)
    try:
        with sigterm_as_interrupt():
            if args.aws:
                engine = Engine(spec, real_aws().store(), **watch)
                return _traced(engine, args, text, progress)
            with stack_clients(args.file, args.offline) as clients:
                engine = Engine(spec, clients.store(), **watch)
                return _traced(engine, args, text, progress)
    except Terminated:
        print("stopped by SIGTERM", file=sys.stderr)
        return EXIT_TERMINATED


def _traced(engine: Any, args: argparse.Namespace, text: str, progress: Progress) -> int:
    """The run, then with --trace its waterfall (infra.cli.waterfall) on stderr."""
    code = _drive(engine, args, text, progress)
    if args.trace and progress.run_id:
        from infra.cli.waterfall import waterfall

        print("\n" + waterfall(engine.store, progress.run_id), file=sys.stderr)
    return code


def _drive(engine: Any, args: argparse.Namespace, text: str, progress: Progress) -> int:
    head = engine.start(args.agent, text, args.session, max_turns=args.max_turns)
    return follow(engine, head.run_id, args, progress)


def follow(engine: Any, run_id: str, args: argparse.Namespace, progress: Progress) -> int:
    """Advance the run until it ends or waits for a person no one here can answer (exit 3,
    saying how to answer later). Also how `agentfn approve|reply RUN_ID` resume a run that
    an earlier `agentfn run` left waiting (infra.cli.local_runs)."""
    from infra.cli import run_approvals

    replies = list(getattr(args, "reply", None) or [])
    offline = bool(getattr(args, "offline", False))
    head = engine.store.load_head(run_id)
    try:
        while True:
            head = run_loop(engine.advance(head.run_id))
            # A run waiting for its children waits for whichever of them waits for a person.
            waiting = waiting_for_a_person(engine.store, head) or head
            if waiting.status == "awaiting_input" and waiting.clarification is not None:
                answer = answer_from(waiting.clarification.question, replies)
                if answer is None:
                    _print_result(engine.result(head.run_id), args.json)
                    print(
                        f"The agent asks: {waiting.clarification.question}\n"
                        'Answer it by running the same command with --reply "…" '
                        "(or run it in a terminal to be asked)"
                        + ("." if offline else f', or later: agentfn reply {waiting.run_id} "…".'),
                        file=sys.stderr,
                    )
                    return EXIT_NEEDS_REPLY
                engine.reply(waiting.run_id, answer)
            elif waiting.status == "awaiting_approval":
                if not run_approvals.decide(engine, engine.spec, waiting, args):
                    _print_result(engine.result(head.run_id), args.json)
                    waiting = engine.store.load_head(waiting.run_id)
                    calls = ", ".join(p.tool_name for p in waiting.pending_approval)
                    shown = run_approvals.pending_lines(engine.spec, waiting)
                    print(
                        f"Waiting for approval of: {calls}.\n"
                        + "\n".join(shown[1:])
                        + "\n"
                        + run_approvals.decide_later(waiting.run_id, offline),
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
    _print_result(result, args.json, progress)
    if head.status == "succeeded":
        return EXIT_OK
    if not args.json:
        print(
            f"run {head.run_id} {head.status}: "
            f"{result.get('error_code')}: {result.get('error_message')}",
            file=sys.stderr,
        )
    return EXIT_FAILED


def answer_from(question: str, replies: list[str]) -> str | None:
    if replies:
        return replies.pop(0)
    if sys.stdin.isatty():
        try:
            return input(f"{question}\n> ")
        except EOFError:
            return None
    return None
