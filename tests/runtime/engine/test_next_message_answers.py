"""The next message answers a pending question (issue 25, seed 000): a message to a session
whose latest run waits for a clarification answers it and resumes that run; it does not
start a second run that leaves the question open."""

from __future__ import annotations

import asyncio

from runtime.store.memory import MemoryStore
from tests.runtime.engine.kit import call, make_spec, new_engine

ASKS = [
    {"tool_calls": [call("agent_clarify", {"question": "Which order?", "reason": "two open"})]},
    {"text": "Order noted."},
    {"text": "Second answer."},
]


def test_the_next_message_in_the_session_answers_the_question() -> None:
    store = MemoryStore()
    engine = new_engine(make_spec(ASKS, tools=[]), store)
    first = asyncio.run(engine.advance(engine.start("a", "where is it?", "s1").run_id))
    assert first.status == "awaiting_input"

    again = engine.start("a", "ORD-7", "s1")
    assert again.run_id == first.run_id and again.status == "running"
    done = asyncio.run(engine.advance(again.run_id))
    assert done.status == "succeeded"
    result = engine.result(done.run_id)
    assert result["result"] == "Order noted."
    assert result["tool_calls"][0]["tool_name"] == "agent_clarify"
    assert result["tool_calls"][0]["output"] == "ORD-7"
    runs = [k for k in store.items if k[1] == "HEAD"]
    assert len(runs) == 1  # no second run was started

    # With nothing pending, the next message starts a new run as before.
    third = engine.start("a", "thanks", "s1")
    assert third.run_id != first.run_id


def test_another_session_or_no_session_starts_a_new_run() -> None:
    engine = new_engine(make_spec(ASKS, tools=[]))
    first = asyncio.run(engine.advance(engine.start("a", "where?", "s1").run_id))
    assert first.status == "awaiting_input"
    assert engine.start("a", "ORD-7", "s2").run_id != first.run_id
    assert engine.start("a", "ORD-7").run_id != first.run_id
    assert engine.store.load_head(first.run_id).status == "awaiting_input"
