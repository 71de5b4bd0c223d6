"""Threads running blocking tool and hook code never keep a process alive: a call abandoned
past its timeout (asyncio.to_thread on the loop of `run_loop`, or an agent's tool pool) is
left behind when the process ends, in real subprocesses; the pool still caps and reuses
its threads."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from runtime.tools.threads import DaemonPool
from tests.helpers import ROOT

STUCK = """
import asyncio, time
from runtime.tools.threads import pool, run_blocking, run_loop

async def main():
    for call in (asyncio.to_thread(time.sleep, 60), run_blocking(pool("a", 2), time.sleep, 60)):
        try:
            await asyncio.wait_for(call, 0.2)
        except TimeoutError:
            print("timed out", flush=True)
    return "done"

print(run_loop(main()), flush=True)
"""


def test_abandoned_calls_do_not_hold_up_the_end_of_the_process() -> None:
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", STUCK], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["timed", "out", "timed", "out", "done"]
    assert time.monotonic() - began < 10  # not the 60 s the calls sleep


def test_the_pool_caps_and_reuses_its_threads() -> None:
    pool = DaemonPool(3, "cap-test")
    running = peak = 0
    lock = threading.Lock()

    def work(i: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.05)
        with lock:
            running -= 1
        return i * 2

    futures = [pool.submit(work, i) for i in range(12)]
    assert [f.result(timeout=10) for f in futures] == [i * 2 for i in range(12)]
    assert peak == 3
    names = {t.name for t in threading.enumerate() if t.name.startswith("cap-test")}
    assert len(names) == 3 and all(
        t.daemon for t in threading.enumerate() if t.name.startswith("cap-test")
    )
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 / 0).result(timeout=5)


def test_run_blocking_hands_over_results_errors_and_context() -> None:
    """The pool's own hop (no concurrent Future): the value, the exception and the
    caller's context variables arrive as with run_in_executor, from a thread of the pool."""
    import asyncio
    import contextvars

    from runtime.tools.threads import run_blocking

    pool = DaemonPool(2, "hop-test")
    who = contextvars.ContextVar("who", default="nobody")

    def whoami(suffix: str, *, sep: str) -> tuple[str, str]:
        return who.get() + sep + suffix, threading.current_thread().name

    async def main() -> None:
        who.set("caller")
        value, thread = await run_blocking(pool, whoami, "x", sep="/")
        assert value == "caller/x" and thread.startswith("hop-test")
        with pytest.raises(ZeroDivisionError):
            await run_blocking(pool, lambda: 1 / 0)
        results = await asyncio.gather(*(run_blocking(pool, pow, i, 2) for i in range(20)))
        assert results == [i * i for i in range(20)]

    asyncio.run(main())


def test_a_call_whose_waiter_gave_up_while_it_queued_never_runs() -> None:
    """As with run_in_executor: a call cancelled (its timeout ran out) before a thread took
    it is never started; one already running finishes in its thread, its result dropped."""
    import asyncio

    from runtime.tools.threads import run_blocking

    pool = DaemonPool(1, "queue-test")
    release = threading.Event()
    ran: list[str] = []

    def hold() -> str:
        ran.append("hold")
        release.wait(10)
        return "held"

    async def main() -> None:
        first = asyncio.ensure_future(run_blocking(pool, hold))
        await asyncio.sleep(0.05)  # the only thread is busy with it
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(run_blocking(pool, ran.append, "queued"), 0.05)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(first, 0.05)  # running: it finishes, nobody waits
        release.set()
        assert await run_blocking(pool, lambda: "next") == "next"

    asyncio.run(main())
    assert ran == ["hold"]


def test_a_call_that_outlives_its_loop_leaves_its_thread_serving() -> None:
    """A call abandoned at its timeout ends after its event loop closed: its result goes
    nowhere, and the thread goes on serving the pool (a one-thread pool would hang)."""
    import asyncio

    from runtime.tools.threads import run_blocking

    pool = DaemonPool(1, "outlive-test")

    async def abandon() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(run_blocking(pool, time.sleep, 0.2), 0.02)

    asyncio.run(abandon())  # the loop closes while the call still sleeps
    time.sleep(0.4)

    async def later() -> str:
        return await asyncio.wait_for(run_blocking(pool, str, 7), 5)

    assert asyncio.run(later()) == "7"
    assert [t.name for t in threading.enumerate() if t.name.startswith("outlive-test")] == [
        "outlive-test_1"
    ]
