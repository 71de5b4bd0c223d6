"""Sync tools of one step run at once, up to the agent's `tool_parallelism` (default 16).

They run in the agent's own thread pool (runtime.tools.threads), not asyncio's default one,
whose `cpu_count + 4` threads (6 on a 2-vCPU Lambda) ran a step's read-only calls in
batches. `meet` proves the overlap without timing anything: each call waits at a barrier
until all of the step's calls have arrived, which only happens if they all run together.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Any

from runtime.clock import FakeClock
from runtime.engine.loop import Engine
from runtime.spec import AgentfnSpec
from runtime.store.memory import MemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures" / "parallel"))
import parallel_tools


def _spec(tool: str, calls: int, defaults: Any = None, **agent: Any) -> AgentfnSpec:
    step = {"tool_calls": [{"name": tool, "arguments": {"n": i}} for i in range(calls)]}
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "defaults": defaults or {},
            "tools_package": "parallel_tools",
            "models": {"m": {"provider": "scripted", "script": [step, {"text": "done"}]}},
            "tools": {
                tool: {
                    "type": "python",
                    "handler": f"parallel_tools:{tool}",
                    "description": "A sync tool.",
                    "effect": "read_only",
                }
            },
            "agents": {"a": {"description": "d", "model": "m", "tools": [tool], **agent}},
        }
    )


def _results(spec: AgentfnSpec) -> list[dict[str, Any]]:
    engine = Engine(spec, MemoryStore(), clock=FakeClock())
    head = asyncio.run(engine.run("a", "go"))
    assert head.status == "succeeded", head.error_message
    calls: list[dict[str, Any]] = engine.result(head.run_id)["tool_calls"]
    return calls


def test_sixteen_sync_read_only_calls_all_run_at_once_by_default() -> None:
    parallel_tools.barrier = threading.Barrier(16)
    calls = _results(_spec("meet", 16))
    assert [c["success"] for c in calls] == [True] * 16, calls[0]["output"]
    assert sorted(c["output"] for c in calls) == list(range(16))


def test_an_agent_s_parallelism_bounds_its_sync_calls() -> None:
    parallel_tools.peak = 0
    calls = _results(_spec("busy", 10, tool_parallelism=4))
    assert all(c["success"] for c in calls)
    assert parallel_tools.peak == 4


def test_the_defaults_set_every_agent_s_parallelism() -> None:
    parallel_tools.peak = 0
    calls = _results(_spec("busy", 5, defaults={"tool_parallelism": 2}))
    assert all(c["success"] for c in calls)
    assert parallel_tools.peak == 2
