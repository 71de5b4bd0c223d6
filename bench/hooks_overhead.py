"""What hooks cost: per-turn engine overhead without hooks (now vs the code before them), and
the per-tool-call cost of one rule hook.

Run:  .venv/bin/python bench/hooks_overhead.py [--baseline REV]   (default REV: HEAD)

What it measures:
- per-turn framework overhead with no hooks (scripted model, in-memory store, one async
  read-only tool call per turn, runs of 50 turns, best of several), for this working tree
  and for REV's `runtime/` (extracted with `git archive` into a temporary folder; nothing
  in the working tree is touched). REV may lack other work in progress besides hooks, so the
  script also times the hooks' own checks on a turn directly;
- the no-hook checks a turn makes (pre_tool_use, post_tool_use, on_run_start due,
  pre_response), each timed in a tight loop;
- one `rule` hook on pre_tool_use: its cost per tool call timed directly (budget: < 20 µs),
  and as the per-turn difference of whole runs with and without it.

Figures vary by up to ±50% from run to run on shared machines; each is the best of several
repetitions. Nothing here is a test; it prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TREE = Path(os.environ.get("AGENTFN_BENCH_TREE", ROOT))
sys.path.insert(0, str(TREE))
sys.path.insert(0, str(ROOT / "bench"))

from runtime.engine.loop import Engine  # noqa: E402
from runtime.spec import AgentfnSpec  # noqa: E402
from runtime.store.memory import MemoryStore  # noqa: E402

TURNS = 50
REPEATS = 9
LOOPS = 20_000

RULE_HOOK = {
    "event": "pre_tool_use",
    "match": "anoop",
    "type": "rule",
    "rules": [{"arg": "i", "op": "not_in", "value": [-1], "else": "deny", "reason": "bad i"}],
}


def spec_for(turns: int, hooks: list[dict[str, Any]] | None = None) -> AgentfnSpec:
    script: list[dict[str, Any]] = [
        {
            "text": f"step {i}",
            "tool_calls": [{"name": "anoop", "arguments": {"i": i}}],
            "usage": {"input_tokens": 10, "output_tokens": 2},
        }
        for i in range(turns - 1)
    ]
    script.append({"text": "done", "usage": {"input_tokens": 10, "output_tokens": 2}})
    agent: dict[str, Any] = {"description": "bench", "model": "m", "tools": ["anoop"]}
    agent["max_turns"] = turns + 5
    if hooks:  # only when asked: the baseline tree has no `hooks` key at all
        agent["hooks"] = hooks
    tool = {
        "type": "python",
        "handler": "bench_tools:anoop",
        "description": "Does nothing.",
        "effect": "read_only",
        "input_schema": {"type": "object", "properties": {"i": {"type": "integer"}}},
    }
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "bench_tools",
            "models": {"m": {"provider": "scripted", "script": script}},
            "tools": {"anoop": tool},
            "agents": {"a": agent},
        }
    )


def ms_per_turn(spec: AgentfnSpec) -> float:
    """The best time per turn of whole runs (ms)."""
    best = float("inf")
    asyncio.run(Engine(spec, MemoryStore()).run("a", "go"))  # warm: imports, schemas
    for _ in range(REPEATS):
        engine = Engine(spec, MemoryStore())
        gc.collect()
        started = time.perf_counter()
        head = asyncio.run(engine.run("a", "go"))
        elapsed = time.perf_counter() - started
        assert head.status == "succeeded", (head.status, head.error_message)
        best = min(best, elapsed / TURNS)
    return best * 1000


def measure_loop() -> dict[str, float]:
    """Run in a subprocess per tree: the no-hook per-turn time."""
    return {"ms_per_turn": ms_per_turn(spec_for(TURNS))}


HOOK_CHECKS = (
    "_pre_tool_use",
    "_post_tool_use",
    "_review_response",
    "_run_complete_hooks",
    "_run_start_due",
    "_hook_notes",
)


def with_and_without_checks(spec: AgentfnSpec) -> tuple[float, float]:
    """(ms/turn as is, ms/turn with the hook checks stubbed out), runs interleaved in one
    process so that both see the same machine; the best of each."""
    from runtime.engine.hooks import HookPhase

    real = {name: getattr(HookPhase, name) for name in HOOK_CHECKS}
    best = {"real": float("inf"), "stub": float("inf")}
    asyncio.run(Engine(spec, MemoryStore()).run("a", "go"))
    for _ in range(REPEATS * 3):
        for variant in ("real", "stub"):
            if variant == "stub":
                stub_hook_checks()
            engine = Engine(spec, MemoryStore())
            gc.collect()
            started = time.perf_counter()
            asyncio.run(engine.run("a", "go"))
            best[variant] = min(best[variant], (time.perf_counter() - started) / TURNS * 1000)
            for name, method in real.items():
                setattr(HookPhase, name, method)
    return best["real"], best["stub"]


def stub_hook_checks() -> None:
    """Replace the engine's hook checks by bare pass-throughs: what this tree costs per turn
    without them (other work since REV included)."""
    from runtime.engine.hooks import HookPhase

    async def pre(self: Any, run: Any, call: Any, *, settle: bool = False) -> Any:
        return call, None

    async def post(self: Any, run: Any, call: Any, result: Any) -> Any:
        return result

    async def nothing(self: Any, *args: Any) -> None:
        return None

    HookPhase._pre_tool_use = pre  # type: ignore[method-assign]
    HookPhase._post_tool_use = post  # type: ignore[method-assign]
    HookPhase._review_response = nothing  # type: ignore[method-assign]
    HookPhase._run_complete_hooks = nothing  # type: ignore[method-assign]
    HookPhase._run_start_due = lambda self, run: False  # type: ignore[method-assign]
    HookPhase._hook_notes = lambda self, run, call_id: ([], {})  # type: ignore[method-assign]


def _cursor(engine: Engine) -> Any:
    from runtime.engine.commits import RunCursor

    head = engine.start("a", "go")
    return RunCursor(head, engine.store.load_messages(head))


def per_call_us(spec: AgentfnSpec, check: str) -> float:
    """Microseconds per call of one of the engine's hook checks, best of REPEATS loops."""
    from runtime.messages import ToolCall, ToolResultMessage

    engine = Engine(spec, MemoryStore())
    run = _cursor(engine)
    call = ToolCall(id="call-1", name="anoop", arguments={"i": 1})
    result = ToolResultMessage(tool_call_id="call-1", tool_name="anoop", content="{}")

    async def loop() -> float:
        best = float("inf")
        for _ in range(REPEATS):
            started = time.perf_counter()
            for _ in range(LOOPS):
                if check == "pre_tool_use":
                    await engine._pre_tool_use(run, call)
                    engine._hook_notes(run, call.id)  # what recording the result takes
                elif check == "post_tool_use":
                    await engine._post_tool_use(run, call, result)
                elif check == "on_run_start due":
                    engine._run_start_due(run)
                else:
                    await engine._review_response(run, {"result": "x"}, [], [])
            best = min(best, (time.perf_counter() - started) / LOOPS)
        return best * 1e6

    return asyncio.run(loop())


def baseline_tree(rev: str, into: Path) -> Path:
    """REV's runtime/ (and the bench tool package) in a folder of its own."""
    archive = subprocess.run(
        ["git", "archive", rev, "runtime"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def in_tree(tree: Path) -> dict[str, float]:
    env = {**os.environ, "AGENTFN_BENCH_TREE": str(tree), "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--measure-loop"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(out.stdout)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="HEAD", help="git revision to compare with")
    parser.add_argument("--measure-loop", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_loop:
        print(json.dumps(measure_loop()))
        return

    print(f"agentfn hooks benchmark ({TURNS}-turn runs, best of {REPEATS})\n")
    now = in_tree(ROOT)["ms_per_turn"]
    with tempfile.TemporaryDirectory() as folder:
        before = in_tree(baseline_tree(args.baseline, Path(folder)))["ms_per_turn"]
    print("no hooks: per-turn framework overhead (scripted model, in-memory store)")
    print(f"  {args.baseline:>12}: {before:.3f} ms/turn")
    print(f"  {'working tree':>12}: {now:.3f} ms/turn ({(now / before - 1) * 100:+.1f}%)")
    real, stubbed = with_and_without_checks(spec_for(TURNS))
    print(
        f"  in one process, interleaved: {real:.3f} ms/turn as is, {stubbed:.3f} with the "
        f"hook checks stubbed out ({(real - stubbed) * 1000:+.1f} µs/turn; the rest of the "
        f"difference is other work since {args.baseline})"
    )

    plain = spec_for(TURNS)
    print(f"\nno hooks: the engine's hook checks, each timed alone ({LOOPS:,} calls, best)")
    checks = ["on_run_start due", "pre_tool_use", "post_tool_use", "pre_response"]
    total = 0.0
    for check in checks:
        cost = per_call_us(plain, check)
        total += cost
        print(f"  {check:<17} {cost:7.3f} µs")
    print(f"  {'a turn makes all':<17} {total:7.3f} µs ({total / 1000 / now * 100:.2f}% of a turn)")

    hooked = spec_for(TURNS, [RULE_HOOK])
    direct = per_call_us(hooked, "pre_tool_use")
    with_rule = ms_per_turn(hooked)
    without = ms_per_turn(plain)
    print("\none rule hook on pre_tool_use (allows; one call per turn)")
    print(f"  per tool call, timed directly: {direct:.1f} µs  (budget < 20 µs)")
    print(
        f"  whole runs: {without:.3f} → {with_rule:.3f} ms/turn "
        f"({(with_rule - without) * 1000:+.1f} µs per call, including its event)"
    )


if __name__ == "__main__":
    main()
