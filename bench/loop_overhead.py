"""Framework overhead of the agent loop, DynamoDB traffic per step, handler import time.

Run:  .venv/bin/python bench/loop_overhead.py          (after `python3 scripts/dev.py setup`)

What it measures (budgets from the engine issue):
- per-turn framework overhead with the scripted model and an in-memory store, for runs of
  N = 10, 50 and 200 turns (budget: ≤ 0.2 ms/turn), and whether the cost per turn is
  constant in N (turns 191-200 within 1.2x of turns 1-10);
- the same runs on moto (DynamoDB + S3 in process): DynamoDB requests and bytes written per
  step as N grows (budget: constant);
- the time `import handlers.<name>` adds to a bare `import boto3` (budget: < 0.1 s).

Each turn is one model answer with one read-only tool call, so a turn exercises the whole
step: prompt, model, two commits, the tool, events. Nothing here is a test; it prints figures.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from runtime.engine.loop import Engine  # noqa: E402
from runtime.events import Event  # noqa: E402
from runtime.spec import AgentfnSpec  # noqa: E402
from runtime.store.memory import MemoryStore  # noqa: E402

SIZES = (10, 50, 200)
REPEATS = 9


def spec_for(turns: int, tool: str = "anoop") -> AgentfnSpec:
    script: list[dict[str, Any]] = [
        {
            "text": f"step {i}",
            "tool_calls": [{"name": tool, "arguments": {"i": i}}],
            "usage": {"input_tokens": 10, "output_tokens": 2},
        }
        for i in range(turns - 1)
    ]
    script.append({"text": "done", "usage": {"input_tokens": 10, "output_tokens": 2}})
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "bench_tools",
            "models": {"m": {"provider": "scripted", "script": script}},
            "tools": {
                tool: {
                    "type": "python",
                    "handler": f"bench_tools:{tool}",
                    "description": "Does nothing.",
                    "effect": "read_only",
                    "input_schema": {"type": "object", "properties": {"i": {"type": "integer"}}},
                }
            },
            "agents": {
                "a": {"description": "bench", "model": "m", "tools": [tool], "max_turns": turns + 5}
            },
        }
    )


class TurnTimer:
    """Timestamps each step_started event: the time between two is one whole turn."""

    def __init__(self) -> None:
        self.marks: list[float] = []

    def __call__(self, event: Event) -> None:
        if event.type in {"step_started", "run_completed"}:
            self.marks.append(time.perf_counter())

    def turns(self) -> list[float]:
        return [b - a for a, b in zip(self.marks, self.marks[1:], strict=False)]


def run_once(spec: AgentfnSpec, store: Any) -> tuple[float, list[float]]:
    timer = TurnTimer()
    engine = Engine(spec, store, listener=timer)
    gc.collect()
    started = time.perf_counter()
    head = asyncio.run(engine.run("a", "go"))
    total = time.perf_counter() - started
    assert head.status == "succeeded", (head.status, head.error_message)
    return total, timer.turns()


def memory_figures(tool: str) -> dict[int, dict[str, float]]:
    figures: dict[int, dict[str, float]] = {}
    for n in SIZES:
        spec = spec_for(n, tool)
        run_once(spec, MemoryStore())  # warm: imports, compiled schemas
        totals, per_turn = [], []
        for _ in range(REPEATS):
            total, turns = run_once(spec, MemoryStore())
            totals.append(total / n)
            per_turn.append(turns)
        best = min(range(REPEATS), key=lambda i: totals[i])
        turns = per_turn[best]
        first = statistics.median(turns[:10])
        last = statistics.median(turns[-10:])
        figures[n] = {
            "ms_per_turn": min(totals) * 1000,
            "first10_ms": first * 1000,
            "last10_ms": last * 1000,
        }
    return figures


def moto_figures() -> dict[int, dict[str, float]]:
    from infra.local.aws import embedded_aws

    figures: dict[int, dict[str, float]] = {}
    with embedded_aws() as clients:
        counts = {"writes": 0, "bytes": 0, "reads": 0}

        def count(params: dict[str, Any], model: Any, **_: Any) -> None:
            if model.name in {"TransactWriteItems", "PutItem", "UpdateItem"}:
                counts["writes"] += len(params.get("TransactItems", [None]))
                counts["bytes"] += len(json.dumps(params))
            else:
                counts["reads"] += 1

        clients.dynamodb.meta.events.register("provide-client-params.dynamodb.*", count)
        for n in SIZES:
            spec = spec_for(n)
            for key in counts:
                counts[key] = 0
            started = time.perf_counter()
            total, _ = run_once(spec, clients.store())
            elapsed = time.perf_counter() - started
            figures[n] = {
                "ms_per_turn": total / n * 1000,
                "items_written_per_step": counts["writes"] / n,
                "bytes_written_per_step": counts["bytes"] / n,
                "reads_per_run": counts["reads"],
                "seconds": elapsed,
            }
    return figures


def import_figures() -> dict[str, float]:
    def best(code: str) -> float:
        times = []
        for _ in range(7):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
            times.append(time.perf_counter() - started)
        return min(times)

    base = best("import boto3")
    out = {"boto3_s": base}
    for module in ("handlers.api", "handlers.step"):
        out[module] = best(f"import boto3, {module}") - base
    return out


def main() -> None:
    print("agentfn loop benchmark (best of", REPEATS, "runs per size)\n")
    for tool, label in (
        ("anoop", "an async tool"),
        ("noop", "a sync tool (run in a worker thread)"),
    ):
        memory = memory_figures(tool)
        print(f"in-memory store, scripted model, 1 call per turn of {label}")
        print(f"{'N':>5} {'ms/turn':>9} {'turns 1-10':>11} {'last 10':>9} {'ratio':>6}")
        for n, f in memory.items():
            ratio = f["last10_ms"] / f["first10_ms"]
            print(
                f"{n:>5} {f['ms_per_turn']:>9.3f} {f['first10_ms']:>11.3f} "
                f"{f['last10_ms']:>9.3f} {ratio:>6.2f}"
            )
        print()
    print("moto (DynamoDB + S3 in process), async tool")
    moto = moto_figures()
    print(f"{'N':>5} {'ms/turn':>9} {'items/step':>11} {'bytes/step':>11} {'reads/run':>10}")
    for n, f in moto.items():
        print(
            f"{n:>5} {f['ms_per_turn']:>9.2f} {f['items_written_per_step']:>11.2f} "
            f"{f['bytes_written_per_step']:>11.0f} {f['reads_per_run']:>10.0f}"
        )
    print("\nimport time added to `import boto3` (best of 7 fresh interpreters)")
    imports = import_figures()
    print(f"  import boto3 alone: {imports['boto3_s'] * 1000:.0f} ms")
    for module in ("handlers.api", "handlers.step"):
        print(f"  + {module}: {imports[module] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
