"""Issue 25's run behaviours through the API handler, on the embedded stack (moto): a
per-run `max_turns`, answering a pending question with the next message, and deleting a
session."""

from __future__ import annotations

from infra.embedded_stack import EmbeddedStack
from tests.handlers.test_handlers import call, run_status


def test_a_start_may_lower_max_turns_and_a_higher_one_is_a_400_naming_it(
    stack: EmbeddedStack,
) -> None:
    # billing's first turn calls a tool: with one turn, tools are withheld and it ends.
    started = call(
        "POST", "/agents/billing/runs", {"input": "refund", "max_turns": 1, "wait_seconds": 10}
    )
    done = run_status(started.body["run_id"], "failed")
    assert done.body["error_code"] == "MAX_TURNS_EXCEEDED" and done.body["turns_used"] == 1

    over = call("POST", "/agents/billing/runs", {"input": "refund", "max_turns": 26})
    assert over.status == 400 and over.body["field"] == "max_turns"
    assert "over the max_turns of agent 'billing'" in over.body["error_message"]
    bad = call("POST", "/agents/billing/runs", {"input": "refund", "max_turns": 0})
    assert bad.status == 400 and bad.body["field"] == "max_turns"
