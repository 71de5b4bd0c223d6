"""Step Functions task entry point of an agent's function (see infra/sam/asl.py).

One function per agent serves every task of its state machine, by `action`:
`advance`, `wait`, `timeout`, `result`, `fail`. Until the engine lands every action answers
a structured NOT_IMPLEMENTED failure (status `failed`), which the state machine routes to
its Failed state, instead of crashing with an unhandled exception.
"""

from __future__ import annotations

import os
from typing import Any

ACTIONS = ("advance", "wait", "timeout", "result", "fail")


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    action = event.get("action", "advance") if isinstance(event, dict) else None
    run_id = event.get("run_id") if isinstance(event, dict) else None
    if action not in ACTIONS:
        return {
            "run_id": run_id,
            "status": "failed",
            "wait_seconds": 0,
            "error_code": "BAD_REQUEST",
            "error_message": f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}",
        }
    return {
        "run_id": run_id,
        "status": "failed",
        "wait_seconds": 0,
        "error_code": "NOT_IMPLEMENTED",
        "error_message": (
            f"action {action!r} for agent {os.environ.get('AGENTFN_AGENT', '?')!r} is not "
            "implemented yet in this agentfn version."
        ),
    }
