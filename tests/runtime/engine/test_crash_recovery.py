"""Crash injection: a fault at every persistence point, before and after the write.

For each point the run is resumed by a *new* engine (a new process: new lease owner, no
warm caches) from the store alone, and must produce the same result as an uninterrupted
run: no duplicated items, no model answer requested twice, no completed tool re-run, and
an at_most_once call never re-run blind.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from runtime.clock import FakeClock
from runtime.engine.loop import Engine
from runtime.errors import RunLeased, RunNotFound
from runtime.store.base import Commit
from runtime.store.memory import MemoryStore
from tests.runtime.engine.kit import CALLS, call, make_spec

SCHEMA = {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}
USAGE = {"input_tokens": 10, "output_tokens": 2}
SCRIPT = [
    {
        "text": "Check, then charge.",
        "tool_calls": [
            call("echo", {"text": "look"}, id="call-1-1"),
            call("charge", {"amount": 5}, id="call-1-2"),
        ],
        "usage": USAGE,
    },
    {
        "tool_calls": [call("agent_clarify", {"question": "Which order?"}, id="call-2-1")],
        "usage": USAGE,
    },
    {"text": "not json yet", "usage": USAGE},
    {"text": '{"order": "ORD-9"}', "usage": USAGE},
]
SPEC = make_spec(
    SCRIPT, tools=["echo", "charge"], output_schema=SCHEMA, approval=[{"tools": ["charge"]}]
)


class SimulatedCrash(BaseException):
    """A process dying: not an Exception, so nothing in the engine can swallow it."""


class FaultyStore:
    """Delegates to a MemoryStore and dies at the n-th commit, before or after writing."""

    def __init__(self, inner: MemoryStore, crash_at: int, phase: str):
        self.inner, self.crash_at, self.phase = inner, crash_at, phase
        self.blobs = inner.blobs
        self.commits = 0
        self.crashed_commit: Commit | None = None

    def commit(self, commit: Commit) -> None:
        self.commits += 1
        if self.commits == self.crash_at and self.phase == "before":
            self.crashed_commit = commit
            raise SimulatedCrash
        self.inner.commit(commit)
        if self.commits == self.crash_at:
            self.crashed_commit = commit
            raise SimulatedCrash

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _drive(engine: Engine, clock: FakeClock, run_id: str | None) -> str:
    """What the orchestrator does: (re)start, advance, answer the question, until done."""
    store = engine.store
    if run_id is None:
        run_id = engine.start("a", "where is my order?").run_id
    for _ in range(20):
        try:
            head = store.load_head(run_id)
        except RunNotFound:  # the crash lost the start itself: the caller starts again
            run_id = engine.start("a", "where is my order?").run_id
            continue
        if head.status == "running":
            try:
                asyncio.run(engine.advance(run_id))
            except RunLeased:
                clock.advance(engine.lease_seconds + 1)  # the dead worker's lease expires
        elif head.status == "awaiting_input":
            engine.reply(run_id, "ORD-9")
        elif head.status == "awaiting_approval":
            engine.decide(run_id, approved=True)
        else:
            return run_id
    raise AssertionError("run did not finish")


def _requests(engine: Engine) -> list[int]:
    model = engine._model_cache.get("m")
    return [r.call_number for r in model.requests] if model else []


def _normal(result: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in result.items() if k not in {"run_id", "session_id"}}
    out["tool_calls"] = [{**c, "duration_ms": 0} for c in result["tool_calls"]]
    return out


def _baseline() -> tuple[dict[str, Any], int, Counter[str], list[int], int]:
    store = MemoryStore()
    clock = FakeClock()
    counting = FaultyStore(store, crash_at=-1, phase="never")
    engine = Engine(SPEC, counting, clock=clock)  # type: ignore[arg-type]
    CALLS.clear()
    run_id = _drive(engine, clock, None)
    return (
        _normal(engine.result(run_id)),
        counting.commits,
        Counter(c[0] for c in CALLS),
        _requests(engine),
        len(store.items),
    )


BASELINE, COMMITS, TOOL_RUNS, MODEL_CALLS, ITEMS = _baseline()


def test_baseline_covers_tools_an_approval_a_question_a_correction_and_success() -> None:
    assert BASELINE["status"] == "succeeded" and BASELINE["result"] == {"order": "ORD-9"}
    assert [c["tool_name"] for c in BASELINE["tool_calls"]] == ["echo", "charge", "agent_clarify"]
    assert TOOL_RUNS == {"echo": 1, "charge": 1}
    assert MODEL_CALLS == [0, 1, 2, 3]
    assert COMMITS >= 10


@pytest.mark.parametrize("phase", ["before", "after"])
@pytest.mark.parametrize("crash_at", range(1, COMMITS + 1))
def test_a_crash_at_any_persistence_point_resumes_to_the_same_result(
    crash_at: int, phase: str
) -> None:
    store = MemoryStore()
    clock = FakeClock()
    faulty = FaultyStore(store, crash_at, phase)
    first = Engine(SPEC, faulty, clock=clock)  # type: ignore[arg-type]
    CALLS.clear()
    run_id: str | None = None
    with pytest.raises(SimulatedCrash):
        _drive(first, clock, None)
    crashed = faulty.crashed_commit
    assert crashed is not None
    if crashed.expected_version is not None or phase == "after":
        run_id = crashed.head.run_id
    tools_before = Counter(c[0] for c in CALLS)

    second = Engine(SPEC, store, clock=clock)  # a new process
    run_id = _drive(second, clock, run_id)
    result = _normal(second.result(run_id))
    tool_runs = tools_before + Counter(c[0] for c in CALLS[sum(tools_before.values()) :])

    # No completed tool re-run; the at_most_once `charge` never twice.
    assert tool_runs["charge"] <= 1
    lost_a_result = phase == "before" and any(m.kind == "tool_result" for _, m in crashed.messages)
    assert tool_runs["echo"] <= TOOL_RUNS["echo"] + (1 if lost_a_result else 0)

    # No persisted model answer requested again.
    calls = _requests(first) + _requests(second)
    lost_an_answer = phase == "before" and any(m.kind == "assistant" for _, m in crashed.messages)
    repeated = [n for n, k in Counter(calls).items() if k > 1]
    assert len(repeated) <= (1 if lost_an_answer else 0), calls

    # The same result; only a charge whose outcome the crash hid may differ, and says so.
    charge_unknown = result["tool_calls"][1]["success"] is False
    started_charge = "call-1-2" in crashed.head.started_calls
    hid_charge = (phase == "after" and started_charge) or (
        phase == "before"
        and any(getattr(m, "tool_name", "") == "charge" for _, m in crashed.messages)
    )
    assert charge_unknown == hid_charge  # only a crash between its start and its result
    expected = BASELINE
    if charge_unknown:
        assert "outcome unknown" in result["tool_calls"][1]["output"]["error"]
        expected = {
            **BASELINE,
            "tool_calls": [
                BASELINE["tool_calls"][0],
                result["tool_calls"][1],
                BASELINE["tool_calls"][2],
            ],
        }
    assert result == expected

    # No duplicated items: the same number of messages and events as the baseline.
    head = store.load_head(run_id)
    assert len(store.load_messages(head)) == len(second.store.load_messages(head))
    assert [e.seq for e in store.list_events(run_id, limit=1000)] == list(range(head.event_seq))
    assert head.msg_seq == len(store.load_messages(head))
