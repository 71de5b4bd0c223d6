"""What every peer harness shares: time a run of N turns, best of several, as agentfn's own
loop benchmark does (bench/loop_overhead.py): the collector paused, the first run a warm-up,
the agent made before the clock starts (`prepare` returns the run, ready to go)."""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable

SIZES = (10, 50, 200)


def best_ms_per_turn(
    prepare: Callable[[int], Callable[[], None]], turns: int, tries: int = 5
) -> float:
    def once() -> float:
        run = prepare(turns)
        gc.collect()
        gc.disable()
        started = time.perf_counter()
        run()
        took = time.perf_counter() - started
        gc.enable()
        return took

    once()
    return min(once() for _ in range(tries)) / turns * 1000


def report(prepare: Callable[[int], Callable[[], None]]) -> None:
    """Prints {N: ms per turn} as JSON for bench/peers.py."""
    sizes = [int(a) for a in sys.argv[1:]] or list(SIZES)
    print(json.dumps({n: best_ms_per_turn(prepare, n) for n in sizes}))
