"""`agentfn session delete ID --agent A`: `DELETE /agents/{agent}/sessions/{id}` over the HTTP
API (issue 25), apart from infra.cli.api_client so that module stays small."""

from __future__ import annotations

import argparse
import json
from typing import Any
from urllib.parse import quote

EXIT_OK = 0


def cmd_session_delete(client: Any, args: argparse.Namespace) -> int:
    """Delete the session's runs, messages and cached objects; say how many runs went."""
    path = f"/agents/{quote(args.agent, safe='')}/sessions/{quote(args.session_id, safe='')}"
    _, answer = client.request("DELETE", path)
    if args.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    else:
        runs = answer.get("deleted_runs") or []
        print(f"session {args.session_id} of {args.agent}: {len(runs)} run(s) deleted")
    return EXIT_OK


def add_session_parser(sub: Any, entry: Any, common: Any) -> None:
    """`agentfn session delete` on `agentfn`'s subparsers (`entry`, `common`: api_client's)."""
    p = sub.add_parser("session", help="manage sessions (HTTP API)")
    actions = p.add_subparsers(dest="action", required=True)
    p = actions.add_parser("delete", help="delete a session: its runs, messages, cached objects")
    p.add_argument("session_id")
    p.add_argument("--agent", required=True, help="the agent the session belongs to")
    p.set_defaults(func=entry(cmd_session_delete))
    common(p)
