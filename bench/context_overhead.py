"""What context management costs, and what it saves.

Run:  .venv/bin/python bench/context_overhead.py          (after `python3 scripts/dev.py setup`)

- per-turn framework time of a run whose prompt never nears the window (the estimate only)
  and of one that compacts every few turns (pruning, then scripted summaries), in memory;
- the largest prompt (estimated tokens) each run sends, against its window;
- how many messages an advance loads at the end of runs of 250, 500 and 995 turns: the
  messages since the last summary, not the whole run (constant, not growing).

Nothing here is a test; it prints figures.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.clock import FakeClock  # noqa: E402
from runtime.engine.context import prompt_tokens  # noqa: E402
from runtime.engine.loop import Engine  # noqa: E402
from runtime.spec import AgentfnSpec  # noqa: E402
from runtime.store.memory import MemoryStore  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "engine"))


def spec(turns: int, size: int, window: int | None) -> AgentfnSpec:
    script: list[dict[str, Any]] = [
        {"text": f"step {i}", "tool_calls": [{"name": "big", "arguments": {"size": size + i}}]}
        for i in range(turns)
    ]
    script.append({"text": "done"})
    model: dict[str, Any] = {"provider": "scripted", "script": script}
    if window:
        model["context_window"] = window
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "engine_tools",
            "models": {"m": model},
            "tools": {
                "big": {
                    "type": "python",
                    "handler": "engine_tools:big",
                    "description": "Big output.",
                    "effect": "read_only",
                }
            },
            "agents": {
                "a": {"description": "d", "model": "m", "tools": ["big"], "max_turns": turns + 5}
            },
        }
    )


def timed(turns: int, size: int, window: int | None) -> tuple[float, int, int, int, int]:
    store = MemoryStore()
    engine = Engine(spec(turns, size, window), store, clock=FakeClock())
    started = time.perf_counter()
    head = asyncio.run(engine.run("a", "go"))
    elapsed = time.perf_counter() - started
    assert head.status == "succeeded", head.error_message
    requests = engine._model_cache["m"].requests  # type: ignore[attr-defined]
    largest = max(prompt_tokens(r.system, r.tools, r.messages) for r in requests)
    final = store.load_head(head.run_id)
    loaded = len(store.load_messages(final, final.context.base))
    return elapsed * 1000 / turns, largest, final.context.compactions, final.msg_seq, loaded


def main() -> None:
    print("per-turn framework time (in memory, scripted model, best of 5)")
    print("  case                          ms/turn  largest prompt  window  compactions")
    for label, size, window in (
        ("never near the window", 1_500, None),
        ("compacts (window 8,000)", 1_500, 8_000),
    ):
        best = min((timed(200, size, window) for _ in range(5)), key=lambda r: r[0])
        shown = f"{window:,}" if window else "1,000,000"
        print(f"  {label:28} {best[0]:8.3f}  {best[1]:14,}  {shown:>9}  {best[2]:11}")
    print()
    print("messages an advance loads at the end of a run (window 8,000 tokens)")
    print("  turns  messages in run  loaded from the summary")
    for turns in (250, 500, 995):
        _ms, _largest, _compactions, total, loaded = timed(turns, 1_500, 8_000)
        print(f"  {turns:5}  {total:15,}  {loaded:23}")


if __name__ == "__main__":
    main()
