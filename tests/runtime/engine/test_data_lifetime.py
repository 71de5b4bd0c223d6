"""A run never outlives its data: every item of a run expires together (`session.ttl`, else
`deployment.retention`), and a wait for a person ends before that, however many waits the
run goes through."""

from __future__ import annotations

import asyncio

import pytest

from runtime.engine.commits import DATA_MARGIN_SECONDS
from tests.runtime.engine.kit import call, make_spec, new_engine


def test_session_ttl_sets_when_the_runs_items_expire() -> None:
    spec = make_spec([{"text": "ok"}], tools=[], session={"ttl": "2d"})
    engine = new_engine(spec)
    head = asyncio.run(engine.run("a", "hello"))
    assert head.expires_at == pytest.approx(head.created_at + 2 * 86_400, abs=2)
    items = engine.store.items.values()
    assert {i["expires_at"] for i in items} == {head.expires_at}  # head, messages, events


def test_waits_end_before_the_data_expires_even_when_they_add_up() -> None:
    script = [
        {"tool_calls": [call("charge", {"amount": 1}, id="c1")]},
        {"tool_calls": [call("agent_clarify", {"question": "Which card?"}, id="q1")]},
        {"text": "done"},
    ]
    spec = make_spec(
        script,
        tools=["charge"],
        approval=[{"tools": ["charge"], "timeout": "20h"}],
        input_timeout="20h",
        session={"ttl": "1d"},
    )
    engine = new_engine(spec)
    head = asyncio.run(engine.run("a", "charge"))
    limit = head.expires_at - DATA_MARGIN_SECONDS
    (pending,) = head.pending_approval
    assert pending.expires_at == pytest.approx(head.created_at + 20 * 3600, abs=2)  # fits
    engine.clock.advance(19 * 3600)  # the approver answers late
    engine.decide(head.run_id, approved=True)
    paused = asyncio.run(engine.advance(head.run_id))
    assert paused.status == "awaiting_input"
    assert paused.clarification is not None
    assert paused.clarification.expires_at == pytest.approx(limit, abs=2)  # cut short, not +20h
    assert paused.clarification.expires_at < paused.expires_at
