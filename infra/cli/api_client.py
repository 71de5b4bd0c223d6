"""`agentfn status | events | approve | reply | cancel | start`: the HTTP API from a terminal.

A run `agentfn run` left is answered from its local state, with no server, when no `--url`
is given (infra.cli.local_runs). Otherwise they talk to any agentfn API: `agentfn dev` (the
default URL) or a deployed stage
(`--url https://….execute-api.REGION.amazonaws.com/Prod`, with `--sigv4` when the API uses
IAM auth; credentials come from the environment, as for the AWS CLI).

Exit codes: 0 the API answered with success; 1 it answered with an error (unknown run, wrong
state, …) or could not be reached; 2 usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any
from urllib.parse import quote

from infra.cli.api_base import (
    DEFAULT_URL,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    LONG_POLL_SECONDS,
    TERMINAL,
    ApiError,
    Client,
    UsageError,
    edited_inputs,
)
from infra.cli.api_sessions import add_session_parser
from infra.cli.api_views import describe, dump, event_line

_dump = dump  # the API's JSON answer, as `--json` prints it


def _run_path(run_id: str, suffix: str = "") -> str:
    return f"/runs/{quote(run_id, safe='')}{suffix}"


def cmd_status(client: Client, args: argparse.Namespace) -> int:
    run = client.get(_run_path(args.run_id))
    print(_dump(run) if args.json else describe(run))
    return EXIT_OK


def _drain(client: Client, args: argparse.Namespace, after: int, wait: int | None = None) -> int:
    while True:
        page = client.get(_run_path(args.run_id, "/events"), after=after, wait=wait)
        wait = None  # only the first read waits
        events = page.get("events") or []
        for event in events:
            print(json.dumps(event, ensure_ascii=False) if args.json else event_line(event))
        sys.stdout.flush()
        following = int(page.get("next_after", events[-1]["seq"])) if events else after
        if following <= after:  # nothing new (or an API that ignores `after`)
            return after
        after = following


def cmd_events(client: Client, args: argparse.Namespace) -> int:
    """The run's events; --follow: live until it ends — over the run's SSE stream where the
    server has one (`agentfn dev`: the answer's text too, as it is written), else by long
    polls (`?wait=20`, the deployed REST API)."""
    after = args.after
    if not args.follow:
        _drain(client, args, after)
        return EXIT_OK
    from infra.cli.api_stream import follow_stream

    streamed = follow_stream(client, _run_path(args.run_id, "/stream"), after, args.json)
    if streamed is not None:
        return EXIT_OK
    while True:
        status = client.get(_run_path(args.run_id)).get("status")
        asked = time.monotonic()
        before = after
        after = _drain(client, args, after, wait=LONG_POLL_SECONDS)  # read after the status
        if status in TERMINAL:
            return EXIT_OK
        if after == before and time.monotonic() - asked < 1:  # a server that did not wait
            time.sleep(args.interval)


def cmd_approve(client: Client, args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"approved": not args.deny}
    if args.reason:
        body["reason"] = args.reason
    if args.tool_call_id:
        body["tool_call_id"] = args.tool_call_id
    edited = edited_inputs(args)
    if edited is not None:
        body["edited_inputs"] = edited
    _, run = client.post(_run_path(args.run_id, "/approval"), body)
    print(_dump(run) if args.json else describe(run))
    return EXIT_OK


def cmd_reply(client: Client, args: argparse.Namespace) -> int:
    _, run = client.post(_run_path(args.run_id, "/reply"), {"input": " ".join(args.text)})
    print(_dump(run) if args.json else describe(run))
    return EXIT_OK


def cmd_cancel(client: Client, args: argparse.Namespace) -> int:
    _, run = client.post(_run_path(args.run_id, "/cancel"), {})
    print(_dump(run) if args.json else describe(run))
    return EXIT_OK


def cmd_start(client: Client, args: argparse.Namespace) -> int:
    from infra.cli.api_workflow_start import start_workflow, workflow_names

    if args.wait < 0:
        raise UsageError("--wait must be 0 or more seconds")
    if args.workflow:
        return start_workflow(client, args)
    body: dict[str, Any] = {"input": " ".join(args.input), "wait_seconds": args.wait}
    if args.session:
        body["session_id"] = args.session
    if args.max_turns is not None:
        body["max_turns"] = args.max_turns
    try:
        _, run = client.post(f"/agents/{quote(args.agent, safe='')}/runs", body)
    except ApiError as exc:
        if exc.status == 404 and args.agent in workflow_names(client):
            return start_workflow(client, args)  # a workflow's name: start that
        raise
    print(_dump(run) if args.json else describe(run))
    return EXIT_OK


# ---- wiring ------------------------------------------------------------------------------


def _common(
    parser: argparse.ArgumentParser, json_help: str = "print the API's JSON answer"
) -> None:
    parser.add_argument(
        "--url",
        default=os.environ.get("AGENTFN_URL", DEFAULT_URL),
        help="the API's base URL (default: $AGENTFN_URL or %(default)s)",
    )
    parser.add_argument(
        "--sigv4", action="store_true", help="sign requests (API with IAM auth; AWS credentials)"
    )
    parser.add_argument("--region", help="the API's region for --sigv4 (default: from the URL)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    parser.add_argument("--json", action="store_true", help=json_help)
    help_file = "the spec whose local state (`agentfn run`'s) is read when no --url is given"
    parser.add_argument("-f", "--file", default="agents.yaml", help=help_file)


def add_parsers(sub: Any) -> None:
    """Register the API commands on `agentfn`'s subparsers."""
    p = sub.add_parser("status", help="a run's status and result (HTTP API)")
    p.add_argument("run_id")
    p.set_defaults(func=_entry(cmd_status))
    _common(p)

    p = sub.add_parser("events", help="a run's events; --follow until it ends (HTTP API)")
    p.add_argument("run_id")
    p.add_argument("--after", type=int, default=-1, help="only events after number N")
    p.add_argument("--follow", action="store_true", help="live until the run ends")
    p.add_argument(
        "--interval",
        type=float,
        default=1.0,
        help="seconds between polls of a server that cannot stream or long-poll",
    )
    p.set_defaults(func=_entry(cmd_events))
    _common(p, json_help="print each event as one JSON object a line (JSON Lines)")

    p = sub.add_parser("approve", help="approve (or --deny) a run's pending tool call(s)")
    p.add_argument("run_id")
    p.add_argument("--deny", action="store_true", help="reject instead (the model is told)")
    p.add_argument("--reason", help="why; the model sees it")
    p.add_argument("--tool-call-id", help="decide only this call (default: every pending call)")
    p.add_argument("--edit", metavar="JSON", help="approve with these inputs instead")
    p.set_defaults(func=_entry(cmd_approve))
    _common(p)

    p = sub.add_parser("reply", help="answer a run's clarification question")
    p.add_argument("run_id")
    p.add_argument("text", nargs="+")
    p.set_defaults(func=_entry(cmd_reply))
    _common(p)

    p = sub.add_parser("cancel", help="cancel a run")
    p.add_argument("run_id")
    p.set_defaults(func=_entry(cmd_cancel))
    _common(p)

    add_session_parser(sub, _entry, _common)
    p = sub.add_parser("start", help="start a run (or a workflow run) over the HTTP API")
    p.add_argument("agent", help="an agent, or a workflow (found by its name, or --workflow)")
    p.add_argument("input", nargs="+", help="the user's message (a workflow's: JSON or text)")
    p.add_argument("--workflow", action="store_true", help="AGENT names a workflow")
    p.add_argument(
        "--wait", type=float, default=0, metavar="N", help="run inline up to N seconds (≤ 25)"
    )
    p.add_argument("--session", help="continue this session")
    p.add_argument("--max-turns", type=int, metavar="N", help="this run's turn limit (≤ its own)")
    p.set_defaults(func=_entry(cmd_start))
    _common(p)


#: Commands that also answer from `agentfn run`'s local state (infra.cli.local_runs).
_LOCAL = {"status", "events", "approve", "reply", "cancel"}


def _entry(command: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            if args.command in _LOCAL:  # a run `agentfn run` kept (infra.cli.local_runs)?
                from infra.cli.local_runs import answer_locally

                if (code := answer_locally(args)) is not None:
                    return code
            client = Client(args.url, sigv4=args.sigv4, region=args.region, timeout=args.timeout)
            return int(command(client, args))
        except UsageError as exc:
            print(f"agentfn {args.command}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except ApiError as exc:
            print(f"agentfn {args.command}: {exc}", file=sys.stderr)
            return EXIT_ERROR

    return run
