"""What a team costs: model calls per handoff, and the parent's work while a child runs.

    .venv/bin/python bench/team_overhead.py

1. Model calls (in process, scripted models): an agent answering alone, the same answer
   after a handoff, and after a handoff and an escalation back. A handoff costs the one call
   in which the model decides to transfer; nothing else (no summary, no routing call).
2. No polling (moto, the generated state machines executing): a parent asks a child that
   waits for a person for 0, 2 and 5 seconds. The parent's function is invoked the same
   number of times whatever the wait: it sleeps on a task token the child's end wakes.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "engine"))

from runtime.clock import FakeClock  # noqa: E402
from runtime.engine.loop import Engine  # noqa: E402
from runtime.errors import RunNotFound  # noqa: E402
from runtime.spec import AgentfnSpec  # noqa: E402
from runtime.store.memory import MemoryStore  # noqa: E402


def _spec(desk: list[dict[str, Any]], refunds: list[dict[str, Any]]) -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "engine_tools",
            "models": {
                "desk": {"provider": "scripted", "script": desk},
                "refunds": {"provider": "scripted", "script": refunds},
                "researcher": {
                    "provider": "scripted",
                    "script": [
                        {"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]},
                        {"text": "42"},
                    ],
                },
            },
            "tools": {
                "echo": {
                    "type": "python",
                    "handler": "engine_tools:echo",
                    "description": "Echo.",
                    "effect": "read_only",
                }
            },
            "agents": {
                "desk": {
                    "description": "Front desk.",
                    "model": "desk",
                    "sub_agents": ["refunds", {"agent": "researcher", "as": "tool"}],
                },
                "refunds": {"description": "Refunds.", "model": "refunds"},
                "researcher": {
                    "description": "Research.",
                    "model": "researcher",
                    "tools": ["echo"],
                    "approval": [{"tools": ["echo"]}],
                },
            },
        }
    )


def _calls(desk: list[dict[str, Any]], refunds: list[dict[str, Any]]) -> tuple[int, float]:
    engine = Engine(_spec(desk, refunds), MemoryStore(), clock=FakeClock())
    started = time.perf_counter()
    head = asyncio.run(engine.run("desk", "refund please"))
    elapsed = (time.perf_counter() - started) * 1000
    assert head.status == "succeeded", engine.result(head.run_id)
    calls = sum(len(m.requests) for m in engine._model_cache.values())  # type: ignore[attr-defined]
    return calls, elapsed


def model_calls() -> None:
    transfer = {"tool_calls": [{"name": "transfer_to_refunds", "arguments": {}}]}
    back = {"tool_calls": [{"name": "request_help", "arguments": {"reason": "yours"}}]}
    cases = {
        "alone": ([{"text": "done"}], [{"text": "unused"}]),
        "handoff": ([transfer], [{"text": "done"}]),
        "handoff + escalation": ([transfer, {"text": "done"}], [back]),
    }
    print("model calls per run (scripted models, in process)")
    print(f"  {'case':24} {'calls':>5} {'ms':>7}")
    for name, (desk, refunds) in cases.items():
        calls, ms = _calls(desk, refunds)
        print(f"  {name:24} {calls:>5} {ms:>7.2f}")


def no_polling() -> None:
    from infra.local.aws import embedded_aws
    from infra.local.embedded_stack import EmbeddedStack

    ask = {"tool_calls": [{"name": "ask_researcher", "arguments": {"task": "price?"}}]}
    spec = _spec([ask, {"text": "done"}], [{"text": "unused"}])
    print("\nparent's function while a child waits for a person (moto, state machines run)")
    print(f"  {'child waits':>11} {'parent invocations':>19} {'by action':>40}")
    for wait in (0, 2, 5):
        with embedded_aws() as clients:
            stack = EmbeddedStack(spec, clients)
            desk = stack.step_services["desk"]
            seen: Counter[str] = Counter()
            original = desk.step

            def counting(
                event: dict[str, Any],
                remaining: float,
                _o: Any = original,
                _seen: Counter[str] = seen,
            ) -> Any:
                _seen[str(event.get("action"))] += 1
                return _o(event, remaining)

            desk.step = counting  # type: ignore[method-assign]
            _code, body = stack.service.start("desk", "price?", wait_seconds=0)
            run_id = body["run_id"]
            store = stack.service.engine.store
            child = None
            for _ in range(400):
                head = store.load_head(run_id)
                try:
                    child = store.load_head(head.children[0].run_id) if head.children else None
                except RunNotFound:  # the parent has committed, the child is being created
                    child = None
                if child and child.status == "awaiting_approval" and child.task_token:
                    break
                time.sleep(0.05)
            assert child is not None, "the child never waited"
            time.sleep(wait)
            stack.service.approve(run_id, True)
            for _ in range(400):
                if store.load_head(run_id).status == "succeeded":
                    break
                time.sleep(0.05)
            assert store.load_head(run_id).status == "succeeded"
            total = sum(seen.values())
            print(f"  {wait:>10}s {total:>19} {dict(sorted(seen.items()))!s:>40}")


if __name__ == "__main__":
    model_calls()
    no_polling()
