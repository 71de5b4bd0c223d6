"""Two workers advancing one run: exactly one proceeds, the other backs off cleanly."""

from __future__ import annotations

import asyncio
import threading

import pytest

from runtime.clock import FakeClock
from runtime.engine.loop import Engine
from runtime.errors import RunLeased, WrongState
from runtime.store.memory import MemoryStore
from tests.runtime.engine.kit import CALLS, call, make_spec

SPEC = make_spec(
    [{"tool_calls": [call("aslow", {"label": "x", "seconds": 0.3})]}, {"text": "done"}],
    tools=["aslow"],
)


def test_two_threads_advance_the_same_run_and_exactly_one_proceeds() -> None:
    store = MemoryStore()
    clock = FakeClock()
    run_id = Engine(SPEC, store, clock=clock).start("a", "go").run_id
    barrier = threading.Barrier(2)
    outcomes: list[str] = []
    CALLS.clear()

    def worker() -> None:
        engine = Engine(SPEC, store, clock=clock)
        barrier.wait()
        try:
            outcomes.append(asyncio.run(engine.advance(run_id)).status)
        except RunLeased:
            outcomes.append("backed off")

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["backed off", "succeeded"]
    assert [c[0] for c in CALLS] == ["aslow"]  # the tool ran once
    assert store.load_head(run_id).status == "succeeded"


def test_a_stale_reader_loses_the_conditional_write_and_backs_off() -> None:
    store = MemoryStore()
    clock = FakeClock()
    first, second = Engine(SPEC, store, clock=clock), Engine(SPEC, store, clock=clock)
    head = first.start("a", "go")
    stale = store.load_head(head.run_id)
    first._acquire(store.load_head(head.run_id))
    with pytest.raises(RunLeased):
        second._acquire(stale)  # read before the other worker's lease: the version moved


def test_a_lease_held_by_a_live_worker_is_respected_until_it_expires() -> None:
    store = MemoryStore()
    clock = FakeClock()
    first, second = Engine(SPEC, store, clock=clock), Engine(SPEC, store, clock=clock)
    head = first.start("a", "go")
    first._acquire(store.load_head(head.run_id))
    with pytest.raises(RunLeased):
        asyncio.run(second.advance(head.run_id))
    clock.advance(first.lease_seconds + 1)
    assert asyncio.run(second.advance(head.run_id)).status == "succeeded"


def test_cancel_wins_over_a_running_worker_which_then_stops() -> None:
    store = MemoryStore()
    clock = FakeClock()
    engine = Engine(SPEC, store, clock=clock)
    head = engine.start("a", "go")

    async def advance_and_cancel() -> str:
        task = asyncio.create_task(engine.advance(head.run_id))
        await asyncio.sleep(0.1)  # the worker is inside the slow tool
        Engine(SPEC, store, clock=clock).cancel(head.run_id, "user changed their mind")
        return (await task).status

    assert asyncio.run(advance_and_cancel()) == "cancelled"
    result = engine.result(head.run_id)
    assert (
        result["error_code"] == "CANCELLED" and result["error_message"] == "user changed their mind"
    )
    with pytest.raises(WrongState):
        engine.cancel(head.run_id)
