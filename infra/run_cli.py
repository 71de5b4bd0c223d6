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
from typing import Any, TextIO

from runtime.events import Event
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


class Progress:
    """Renders events as they are committed. A team's runs nest: a child run (an agent asked
    as a tool) is indented under the run that asked it; handoffs and escalations say who
    has the conversation now."""

    def __init__(
        self,
        stream: TextIO,
        enabled: bool,
        *,
        tag_runs: bool = False,
        live: TextIO | None = None,
    ):
        self.stream = stream
        self.enabled = enabled
        self.tag_runs = tag_runs  # many runs at once (`agentfn dev`): start lines with the run
        self.live = live  # where the caller's run's answer streams (a terminal), if anywhere
        self._depth: dict[str, int] = {}
        self.run_id: str | None = None  # the first run started (the caller's): --trace
        self._writing: tuple[int, str, int] | None = None  # (turn, model, attempt) streaming
        self._streamed: dict[int, str] = {}  # turn → its text as streamed
        self._lock = threading.Lock()

    def chunk(self, chunk: dict[str, Any]) -> None:
        """A text delta of the caller's run (runtime.live), written where it streams; a new
        attempt of the same turn (a retry, a fallback) starts the text over on a new line."""
        if not self.enabled or self.live is None or chunk["run_id"] != self.run_id:
            return
        key = (chunk["turn"], chunk["model"], chunk["attempt"])
        with self._lock:
            if self._writing is not None and self._writing != key:
                self.live.write(f"\n↻ {chunk['model']} again:\n")
                self._streamed.pop(chunk["turn"], None)
            self._writing = key
            self._streamed[chunk["turn"]] = self._streamed.get(chunk["turn"], "") + chunk["text"]
            self.live.write(chunk["text"])
            self.live.flush()

    def streamed(self, result: Any) -> bool:
        """Whether the result already reached the terminal as it streamed (a structured
        result: as the JSON text the model wrote)."""
        if isinstance(result, str):
            return bool(result) and result in self._streamed.values()
        for text in self._streamed.values():
            try:
                if result is not None and json.loads(text) == result:
                    return True
            except ValueError:
                continue
        return False

    def __call__(self, event: Event) -> None:
        if self.run_id is None and event.type == "run_started":
            self.run_id = event.run_id
        if not self.enabled:
            return
        with self._lock:
            if self._writing is not None and self.live is not None:
                self.live.write("\n")  # the streamed text ends; progress goes on below it
                self.live.flush()
                self._writing = None
        line = self._line(event)
        if line is not None:
            indent = "  " * self._depth.get(event.run_id, 0) * 2
            if self.tag_runs:
                indent = f"…{event.run_id[-6:]} {indent}"
            print(indent + line.replace("\n", "\n" + indent), file=self.stream, flush=True)

    def _line(self, event: Event) -> str | None:
        d = event.data
        if event.type == "run_started":
            if d.get("parent_run_id"):
                return f"▶ {d['agent']} · asked by its supervisor · run {event.run_id[:12]}"
            return f"▶ {d['agent']} · session {d['session_id'][:12]}"
        if event.type == "model_response":
            usage = d.get("usage", {})
            tokens = f"{usage.get('input_tokens', 0)}→{usage.get('output_tokens', 0)} tokens"
            head = f"  step {d['turn']} · {d['model']} · {tokens}"
            if d.get("stop_reason") == "max_tokens":
                head += " · cut off at the token limit"
            text = (d.get("text") or "").strip()
            if event.run_id == self.run_id and d["turn"] in self._streamed:
                text = ""  # it was on the terminal as it streamed
            if text and d.get("tool_calls"):
                head += "\n    " + text.replace("\n", "\n    ")
            return head
        if event.type == "tools_unavailable":
            return (
                f"  ⚠ MCP server {d['server']} is unavailable; the run goes on without its "
                f"tools: {d['error']}"
            )
        if event.type == "tool_result":
            mark = "✓" if d["success"] else "✗"
            detail = "" if d["success"] else f" · {d['output'][:160]}"
            return f"    {mark} {d['tool_name']} · {d['duration_ms']} ms{detail}"
        if event.type == "context_compacted":
            return _compaction_line(d)
        return self._team_line(event) or self._person_line(event) or self._end_line(event)

    def _team_line(self, event: Event) -> str | None:
        d = event.data
        if event.type == "handoff":
            return f"  ⇢ {d['to']} takes the conversation over · {d.get('reason') or ''}".rstrip(
                " ·"
            )
        if event.type == "escalation":
            return f"  ⇠ {d['from']} asks {d['to']} for help · {d.get('reason') or ''}".rstrip(" ·")
        if event.type == "intent_matched":
            return f"  ⚡ intent · {d['intent']} → {d['then']}"
        if event.type == "child_run_started":
            self._depth[d["run_id"]] = self._depth.get(event.run_id, 0) + 1
            return f"    ↳ asking {d['agent']}"
        if event.type == "child_run_finished":
            mark = "✓" if d["status"] == "succeeded" else "✗"
            return f"    {mark} ask_{d['agent']} · {d['status']}"
        return None

    def _person_line(self, event: Event) -> str | None:
        d = event.data
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
        return None

    def _end_line(self, event: Event) -> str | None:
        d = event.data
        if event.type == "hook_decision" and (d["decision"] != "allow" or d.get("error")):
            what = f" {d['tool_name']}" if d.get("tool_name") else ""
            why = d.get("error") or d.get("reason")
            line = f"    ⚑ {d['event']}{what}: {d['decision']} ({d['type']} hook {d['hook']})"
            return line + (f" · {why}" if why else "")
        if event.type == "run_completed":
            tokens = f"{d['tokens_input']} in / {d['tokens_output']} out tokens"
            cost = f" · ${d['cost_usd']:.4f}" if d.get("cost_usd") else ""
            return f"✓ succeeded in {d['turns_used']} turns · {tokens}{cost}"
        if event.type == "run_failed":
            return f"✗ {d['error_code']}: {d['error_message']}"
        return None


def _compaction_line(d: dict[str, Any]) -> str:
    done = [f"{d['pruned']} outputs set aside"] if d.get("pruned") else []
    if d.get("summarised"):
        done.append(f"{d['summarised']} messages summarised by {d['summary_model']}")
    line = f"  ⇣ context compacted · {d['before']:,} → {d['after']:,} tokens"
    line += f" · {', '.join(done)}" if done else ""
    return line + ("" if d.get("ok") else f" · not enough: {d.get('error') or 'still too long'}")


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
    from infra.local import real_aws
    from infra.local_runs import prepare_project, stack_clients
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
    """The run, then with --trace its waterfall (infra.waterfall) on stderr."""
    code = _drive(engine, args, text, progress)
    if args.trace and progress.run_id:
        from infra.waterfall import waterfall

        print("\n" + waterfall(engine.store, progress.run_id), file=sys.stderr)
    return code


def _drive(engine: Any, args: argparse.Namespace, text: str, progress: Progress) -> int:
    head = engine.start(args.agent, text, args.session, max_turns=args.max_turns)
    return follow(engine, head.run_id, args, progress)


def follow(engine: Any, run_id: str, args: argparse.Namespace, progress: Progress) -> int:
    """Advance the run until it ends or waits for a person no one here can answer (exit 3,
    saying how to answer later). Also how `agentfn approve|reply RUN_ID` resume a run that
    an earlier `agentfn run` left waiting (infra.local_runs)."""
    from infra import run_approvals

    replies = list(getattr(args, "reply", None) or [])
    offline = bool(getattr(args, "offline", False))
    head = engine.store.load_head(run_id)
    try:
        while True:
            head = run_loop(engine.advance(head.run_id))
            # A run waiting for its children waits for whichever of them waits for a person.
            waiting = waiting_for_a_person(engine.store, head) or head
            if waiting.status == "awaiting_input" and waiting.clarification is not None:
                answer = _answer(waiting.clarification.question, replies)
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


def _answer(question: str, replies: list[str]) -> str | None:
    if replies:
        return replies.pop(0)
    if sys.stdin.isatty():
        try:
            return input(f"{question}\n> ")
        except EOFError:
            return None
    return None
