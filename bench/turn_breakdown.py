"""Where a turn's framework time goes: the loop benchmark's 200-turn run, with one part after
another replaced by (almost) nothing, each row keeping the replacements above it.

Run:  .venv/bin/python bench/turn_breakdown.py        (after `python3 scripts/dev.py setup`)

Ablation, not a profile (cProfile doubles a turn and blames the calls it instruments): each
row is the best of 15 runs of the same run, the collector paused as in loop_overhead.py. It
patches the engine's internals, so it follows them: a rename breaks it loudly, never
silently (every replaced name is looked up first).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from loop_overhead import spec_for  # noqa: E402

import runtime.engine.commits as commits  # noqa: E402
import runtime.engine.loop as loop  # noqa: E402
from runtime.store.memory import MemoryStore  # noqa: E402

TURNS = 200
SPEC = spec_for(TURNS, "anoop")


def microseconds_per_turn() -> float:
    def once() -> float:
        engine = loop.Engine(SPEC, MemoryStore())
        gc.collect()
        gc.disable()
        started = time.perf_counter()
        head = asyncio.run(engine.run("a", "go"))
        took = time.perf_counter() - started
        gc.enable()
        assert head.status == "succeeded", head.error_message
        return took

    once()
    return min(once() for _ in range(15)) / TURNS * 1e6


def patch(owner: Any, name: str, value: Any) -> None:
    getattr(owner, name)  # exists: a rename fails here
    setattr(owner, name, value)


_STORE_COMMIT = MemoryStore.commit


def store_nothing(self: MemoryStore, commit: commits.Commit) -> None:
    """Keeps only the run's first commit (the run needs it to start)."""
    if commit.expected_version is None:
        _STORE_COMMIT(self, commit)


def copy_only(self: Any, head: Any, messages: Any, events: Any, **options: Any) -> Any:
    update = options.get("update") or {}
    new = msgspec.structs.replace(
        head,
        **{
            **update,
            "version": head.version + 1,
            "msg_seq": head.msg_seq + len(messages),
            "event_seq": head.event_seq + len(events),
        },
    )
    if options.get("create"):  # the run's first head, for the run to start from
        self.store.commit(commits.Commit(head=new, expected_version=None, messages=[], events=[]))
    return new


async def whole_history(self: Any, run: Any, system: str, specs: Any, forced: bool = False) -> Any:
    return list(run.messages), 100


def main() -> None:
    print(f"agentfn: where a turn's framework time goes ({TURNS} turns, in memory)")
    rows: list[tuple[str, float]] = [("a whole turn", microseconds_per_turn())]
    patch(MemoryStore, "commit", store_nothing)
    rows.append(("the store keeps nothing (its items, their JSON)", microseconds_per_turn()))
    patch(commits.Persistence, "_commit", copy_only)
    rows.append(("a commit is a head copy (no events, redaction)", microseconds_per_turn()))
    patch(loop.Engine, "_fit", whole_history)
    rows.append(("no context-window estimate", microseconds_per_turn()))
    patch(loop, "check_budget", lambda *a, **k: None)
    patch(loop, "next_call", lambda *a, **k: None)
    rows.append(("no budget check", microseconds_per_turn()))
    patch(loop, "doom_loop", lambda *a, **k: None)
    patch(loop, "own_call_ids", lambda calls: calls)
    rows.append(("no repeat detection, the model's own call ids", microseconds_per_turn()))
    previous = None
    for label, value in rows:
        saved = "" if previous is None else f"  (-{previous - value:.0f})"
        print(f"  {label:50} {value:6.1f} µs{saved}")
        previous = value
    print("  what is left: the model and the tool called through the engine (hooks, timeouts)")


if __name__ == "__main__":
    main()
