"""Per-run `max_turns` (issue 25): a caller lowers one run's turn limit; the agent's own
limit stays the ceiling, and the limit is on the run's head so a resume keeps it."""

from __future__ import annotations

import asyncio

import pytest

from runtime.errors import InvalidRequest
from runtime.store.memory import MemoryStore
from tests.runtime.engine.kit import CALLS, call, make_spec, new_engine

TOOL_LOOP = [{"tool_calls": [call("echo", {"text": str(i)})]} for i in range(8)]


def test_a_runs_own_max_turns_ends_it_before_the_agents_limit() -> None:
    engine = new_engine(make_spec(TOOL_LOOP, max_turns=8))
    CALLS.clear()
    head = asyncio.run(engine.advance(engine.start("a", "go", max_turns=2).run_id))
    assert head.status == "failed" and head.error_code == "MAX_TURNS_EXCEEDED"
    assert head.turn == 2 and "max_turns (2)" in (head.error_message or "")
    assert head.max_turns == 2


def test_a_resumed_run_keeps_its_own_limit() -> None:
    store = MemoryStore()
    spec = make_spec(TOOL_LOOP, max_turns=8)
    first = new_engine(spec, store)
    head = first.start("a", "go", max_turns=3)
    # Another process (a fresh engine) picks the run up from what is persisted.
    done = asyncio.run(new_engine(spec, store).advance(head.run_id))
    assert done.error_code == "MAX_TURNS_EXCEEDED" and done.turn == 3


def test_more_turns_than_the_agent_allows_is_refused_naming_the_field() -> None:
    engine = new_engine(make_spec(TOOL_LOOP, max_turns=4))
    with pytest.raises(InvalidRequest) as raised:
        engine.start("a", "go", max_turns=5)
    assert raised.value.field == "max_turns" and "(4)" in str(raised.value)
    with pytest.raises(InvalidRequest):
        engine.start("a", "go", max_turns=0)
    assert engine.start("a", "go", max_turns=4).max_turns == 4  # the ceiling itself is fine
