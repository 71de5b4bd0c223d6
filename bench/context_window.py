"""Tokens sent per turn when every tool result is larger than the window can hold whole.

Run:  .venv/bin/python bench/context_window.py          (after `python3 scripts/dev.py setup`)

A 200-turn run of a `scripted` model declared with a 32,000-token window, each turn calling
a tool that returns 20,000 characters (about 5,000 tokens). The scripted model refuses a
prompt over its window, as a real one does, so the run finishing is itself the check. It
prints the prompt's tokens per turn (min, median, max, and every 20th turn), what the
window leaves a prompt beside the answer's reserve, the compactions and summaries, and how
many characters each turn's result showed the model (the rest is in the cache).

Nothing here is a test; it prints figures (issue 25).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "engine"))

from runtime.clock import FakeClock  # noqa: E402
from runtime.engine.loop import Engine  # noqa: E402
from runtime.messages import ToolResultMessage  # noqa: E402
from runtime.models.tokens import prompt_tokens  # noqa: E402
from runtime.models.windows import prompt_budget  # noqa: E402
from runtime.spec import AgentfnSpec  # noqa: E402
from runtime.store.memory import MemoryStore  # noqa: E402

TURNS = 200
RESULT_CHARS = 20_000
WINDOW = 32_000


def spec() -> AgentfnSpec:
    script: list[dict[str, Any]] = [
        {
            "text": f"Reading part {i}.",
            "tool_calls": [{"name": "big", "arguments": {"size": RESULT_CHARS + i}}],
        }
        for i in range(TURNS)
    ]
    script.append({"text": "done"})
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "engine_tools",
            "models": {
                "m": {"provider": "scripted", "context_window": WINDOW, "script": script},
            },
            "tools": {
                "big": {
                    "type": "python",
                    "handler": "engine_tools:big",
                    "description": "Big output.",
                    "effect": "read_only",
                }
            },
            "agents": {
                "a": {
                    "description": "d",
                    "model": "m",
                    "tools": ["big", "builtin:session_cache_get"],
                    "max_turns": TURNS + 5,
                }
            },
        }
    )


def main() -> None:
    built = spec()
    store = MemoryStore()
    engine = Engine(built, store, clock=FakeClock())
    started = time.perf_counter()
    head = asyncio.run(engine.run("a", "Read all the parts."))
    elapsed = time.perf_counter() - started
    assert head.status == "succeeded", head.error_message
    requests = engine._model_cache["m"].requests  # type: ignore[attr-defined]
    answers = [r for r in requests if r.purpose == "answer"]
    summaries = [r for r in requests if r.purpose == "summary"]
    sizes = [prompt_tokens(r.system, r.tools, r.messages) for r in answers]
    final = store.load_head(head.run_id)
    results = [
        m
        for m in store.load_messages(final)
        if isinstance(m, ToolResultMessage) and m.tool_name == "big"
    ]
    previews = [m for m in results if m.full_size and len(m.content) < m.full_size]
    budget = prompt_budget(built.models["m"])
    print(f"{TURNS} turns, {RESULT_CHARS:,}-character tool results, window {WINDOW:,} tokens")
    print(f"  prompt budget (window less the answer's reserve): {budget:,} tokens")
    print(
        f"  tokens sent per turn: min {min(sizes):,}, median {int(statistics.median(sizes)):,}, "
        f"max {max(sizes):,} (over the window: {sum(s > WINDOW for s in sizes)})"
    )
    print(f"  total tokens sent: {sum(sizes):,} in {len(answers)} model calls")
    print(f"  compactions: {final.context.compactions}, summaries written: {len(summaries)}")
    print(
        f"  results sent whole when new: {len(results) - len(previews)} of {len(results)} "
        "(older ones become placeholders naming their cache id)"
    )
    print(f"  framework time: {elapsed * 1000 / TURNS:.2f} ms/turn")
    print("  turn  tokens")
    for turn in range(0, len(sizes), 20):
        print(f"  {turn + 1:4}  {sizes[turn]:6,}")
    if (len(sizes) - 1) % 20:
        print(f"  {len(sizes):4}  {sizes[-1]:6,}")


if __name__ == "__main__":
    main()
