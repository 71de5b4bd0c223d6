"""Framework time per turn with a sync and an async tool, at turns 1, 50 and 200, and the time
to build an agent for a run (issue 26, target 5), for this tree and, side by side, another
commit.

    .venv/bin/python bench/turn_cost.py [--compare REV] [--repeats 9]

The run is loop_overhead.py's (a scripted model; each turn one call of a tool that does
nothing; an in-memory store): 200 turns, once with the async tool `anoop` and once with the
sync `noop` (run in the agent's thread pool). A turn's time is the time between two of its
`step_started` events; "turn k" is the median of turns k-2..k+2 (turn 1: 1..5), the best of
the repeats. The per-turn figures are wall time on one thread, so a shared machine shows in
them: the CPU time of the whole run per turn (process time: both threads) is printed
beside them, and the load average with the figures.

Building an agent for a run: from the spec as loaded (an AgentfnSpec, the same object from
run to run, as a warm Lambda container or `agentfn dev` holds it) to the first model call of
a new run on a new Engine: the Engine, the agent's tools and model resolved, hashes, the
first commit. Printed as the CPU time of a one-turn run on a new Engine less the same run
on a warm Engine (the median of 30); plus validating the spec itself, for reference.

The sync tool's extra time is the hop to a worker thread and back: two thread wake-ups, each
a wait for the OS scheduler. With the process held to one CPU (`sched_setaffinity`, as
`taskset -c 0`) the same sync run is measured again: the difference is what waking a thread
on the other CPU costs (an interrupt between CPUs, dear in a VM), the part of the hop no
code of ours can remove.

This is the benchmark that would have caught the sync path losing its time: it prints the
sync and async figures side by side and flags a turn over 0.1 ms, a sync turn over 1.5 times the
async one, and a turn-200 figure over 1.2 times turn 1. `--compare REV` runs the same
measurement on `git archive REV` (runtime/ and bench/) in a subprocess.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TURNS = 200
AT = (1, 50, 200)
BUDGET_MS = 0.1


def _turn_at(turns: list[float], k: int) -> float:
    low = max(0, k - 3) if k > 1 else 0
    window = turns[low : low + 5]
    return statistics.median(window)


def measure(repeats: int, tools: tuple[str, ...] = ("anoop", "noop")) -> dict[str, Any]:
    """The figures for the tree this interpreter imports `runtime` from."""
    sys.path.insert(0, str(Path.cwd() / "bench"))
    from loop_overhead import TurnTimer, spec_for

    from runtime.engine.loop import Engine
    from runtime.store.memory import MemoryStore

    out: dict[str, Any] = {}
    for tool in tools:
        spec = spec_for(TURNS, tool)
        best: dict[int, float] = {}
        cpu: list[float] = []
        for attempt in range(repeats + 1):
            timer = TurnTimer()
            engine = Engine(spec, MemoryStore(), listener=timer)
            gc.collect()
            gc.disable()
            started = time.process_time()
            head = asyncio.run(engine.run("a", "go"))
            spent = time.process_time() - started
            gc.enable()
            assert head.status == "succeeded", head.error_message
            if attempt == 0:
                continue  # warm: imports, compiled schemas, the pool's thread
            turns = timer.turns()
            cpu.append(spent / TURNS)
            for k in AT:
                best[k] = min(best.get(k, 1.0), _turn_at(turns, k))
        out[tool] = {"turns_ms": {k: v * 1000 for k, v in best.items()}, "cpu_ms": min(cpu) * 1e3}
    if tools != ("anoop", "noop"):
        return out
    out["build_ms"], out["validate_ms"] = _build(spec_for, Engine, MemoryStore)
    out["hop_ms"] = _hop() * 1e3
    return out


def _hop() -> float:
    """The thread hop alone: a sync function that does nothing, awaited through the agent's
    pool as a sync tool is (the best of 6 rounds of 500 calls)."""
    try:
        from runtime.tools.threads import pool, run_blocking
    except ImportError:  # an older tree: asyncio's own pool
        return 0.0

    async def calls() -> float:
        executor = pool("bench", 16)
        best = 1.0
        for _ in range(6):
            started = time.perf_counter()
            for _ in range(500):
                await run_blocking(executor, dict)
            best = min(best, (time.perf_counter() - started) / 500)
        return best

    return asyncio.run(calls())


def _build(spec_for: Any, engine: Any, store: Any) -> tuple[float, float]:
    spec = spec_for(1, "noop")
    asyncio.run(engine(spec, store()).run("a", "go"))  # warm
    warm = engine(spec, store())
    asyncio.run(warm.run("a", "go"))
    fresh, reused, validate = [], [], []
    for _ in range(30):
        started = time.process_time()
        asyncio.run(engine(spec, store()).run("a", "go"))
        fresh.append(time.process_time() - started)
        started = time.process_time()
        asyncio.run(warm.run("a", "go"))
        reused.append(time.process_time() - started)
        started = time.process_time()
        spec_for(1, "noop")
        validate.append(time.process_time() - started)
    build = statistics.median(fresh) - statistics.median(reused)
    return max(0.0, build) * 1e3, statistics.median(validate) * 1e3


def _tree_of(rev: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", rev, "runtime", "bench"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    tar = into / "tree.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as opened:
        opened.extractall(into, filter="data")
    return into


def _measure_in(tree: Path, repeats: int, *, one_cpu: bool = False) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    flags = ["--one-cpu"] if one_cpu else []
    done = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--json",
            "--repeats",
            str(repeats),
            *flags,
        ],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    for tool in ("anoop", "noop") if not one_cpu else ("noop",):  # JSON keys are strings
        figures[tool]["turns_ms"] = {int(k): v for k, v in figures[tool]["turns_ms"].items()}
    return figures


def _print(label: str, f: dict[str, Any], one_cpu: dict[str, Any] | None = None) -> None:
    print(f"  {label}")
    heads = "".join(f"{'turn ' + str(k):>10}" for k in AT)
    print(f"    {'tool':24}{heads}{'CPU/turn':>10}  (ms)")
    for tool, name in (("anoop", "async tool"), ("noop", "sync tool (thread pool)")):
        cells = "".join(f"{f[tool]['turns_ms'][k]:>10.3f}" for k in AT)
        print(f"    {name:24}{cells}{f[tool]['cpu_ms']:>10.3f}")
    if one_cpu is not None:
        cells = "".join(f"{one_cpu['noop']['turns_ms'][k]:>10.3f}" for k in AT)
        print(f"    {'sync tool, on one CPU':24}{cells}{one_cpu['noop']['cpu_ms']:>10.3f}")
    a, s = f["anoop"]["turns_ms"], f["noop"]["turns_ms"]
    flags = []
    if max(*a.values(), *s.values()) > BUDGET_MS:
        flags.append(f"a turn over {BUDGET_MS} ms")
    if s[1] > 1.5 * a[1]:
        flags.append(f"sync {s[1] / a[1]:.1f}x async")
    if max(a[200] / a[1], s[200] / s[1]) > 1.2:
        flags.append("turn 200 over 1.2x turn 1")
    print(f"    the thread hop alone (a sync no-op through the pool): {f['hop_ms']:.3f} ms")
    print(f"    building an agent for a run: {f['build_ms']:.2f} ms CPU (budget 10 ms); "
          f"validating the spec: {f['validate_ms']:.2f} ms")  # fmt: skip
    print(f"    {'; '.join(flags) if flags else 'within every budget'}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", metavar="REV", help="also measure this commit")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--one-cpu", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        if args.one_cpu:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # before any thread starts
        print(json.dumps(measure(args.repeats, ("noop",) if args.one_cpu else ("anoop", "noop"))))
        return
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"framework time per turn, {TURNS}-turn run in memory (load average {load})")
    if args.compare:
        with tempfile.TemporaryDirectory() as folder:
            _print(args.compare, _measure_in(_tree_of(args.compare, Path(folder)), args.repeats))
    one_cpu = (
        _measure_in(ROOT, args.repeats, one_cpu=True) if hasattr(os, "sched_setaffinity") else None
    )
    _print("this tree", _measure_in(ROOT, args.repeats), one_cpu)
    print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
