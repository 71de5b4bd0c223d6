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
