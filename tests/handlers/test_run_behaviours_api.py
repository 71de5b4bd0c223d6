"""Issue 25's run behaviours through the API handler, on the embedded stack (moto): a
per-run `max_turns`, answering a pending question with the next message, and deleting a
session."""

from __future__ import annotations

from infra.local.embedded_stack import EmbeddedStack
from tests.handlers.test_handlers import call, run_status, table_items


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


def test_the_next_message_to_a_session_answers_its_pending_question(
    stack: EmbeddedStack,
) -> None:
    asked = call(
        "POST",
        "/agents/triage/runs",
        {"input": "Where is my order?", "session_id": "chat-25", "wait_seconds": 10},
    )
    assert asked.status == 202 and asked.body["status"] == "awaiting_input"
    # A chat UI sends the answer as the next message of the same session.
    answered = call(
        "POST",
        "/agents/triage/runs",
        {"input": "ORD-1002", "session_id": "chat-25", "wait_seconds": 10},
    )
    assert answered.status in {200, 202}
    assert answered.body["run_id"] == asked.body["run_id"]
    done = run_status(asked.body["run_id"], "succeeded")
    assert "ORD-1002" in done.body["result"]
    assert done.body["tool_calls"][0]["output"] == "ORD-1002"


def _session_items(stack: EmbeddedStack, agent: str, session_id: str, run_id: str) -> int:
    pks = {f"SES#{agent}#{session_id}", f"RUN#{run_id}"}
    return sum(1 for i in table_items(stack) if i["pk"]["S"] in pks)


def _objects(stack: EmbeddedStack, prefix: str) -> list[str]:
    listed = stack.clients.s3.list_objects_v2(Bucket=stack.clients.bucket, Prefix=prefix)
    return [o["Key"] for o in listed.get("Contents", [])]


def test_a_session_is_deleted_on_demand_with_its_items_and_cached_objects(
    stack: EmbeddedStack,
) -> None:
    # shipping calls an MCP tool: its output is kept in the session's tool-output cache.
    body = {"input": "Where is ORD-1002?", "session_id": "gone-1", "wait_seconds": 20}
    started = call("POST", "/agents/shipping/runs", body)
    run_id = started.body["run_id"]
    run_status(run_id, "succeeded")
    kept = call("POST", "/agents/shipping/runs", {**body, "session_id": "kept-1"})
    run_status(kept.body["run_id"], "succeeded")
    assert _session_items(stack, "shipping", "gone-1", run_id) > 3
    assert _objects(stack, "tool-cache/shipping/gone-1/")

    deleted = call("DELETE", "/agents/shipping/sessions/gone-1")
    assert deleted.status == 200 and deleted.body["deleted_runs"] == [run_id]
    assert _session_items(stack, "shipping", "gone-1", run_id) == 0
    assert _objects(stack, "tool-cache/shipping/gone-1/") == []
    assert _objects(stack, f"bodies/{run_id}/") == [] and _objects(stack, f"results/{run_id}") == []
    assert call("GET", f"/runs/{run_id}").status == 404
    # Another session of the same agent is untouched; deleting again deletes nothing.
    assert call("GET", f"/runs/{kept.body['run_id']}").status == 200
    assert _objects(stack, "tool-cache/shipping/kept-1/")
    again = call("DELETE", "/agents/shipping/sessions/gone-1")
    assert again.status == 200 and again.body["deleted_runs"] == []


def test_a_session_with_a_run_still_going_is_409_and_unknown_agents_404(
    stack: EmbeddedStack,
) -> None:
    body = {"input": "Where is my order?", "session_id": "busy-1", "wait_seconds": 10}
    asked = call("POST", "/agents/triage/runs", body)
    assert asked.body["status"] == "awaiting_input"
    refused = call("DELETE", "/agents/triage/sessions/busy-1")
    assert refused.status == 409 and refused.body["status"] == "awaiting_input"
    assert call("GET", f"/runs/{asked.body['run_id']}").status == 200
    assert call("DELETE", "/agents/nobody/sessions/busy-1").status == 404
    bad = call("DELETE", "/agents/triage/sessions/bad%20id")
    assert bad.status == 400
