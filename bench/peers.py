"""Framework time per turn, agentfn next to the peer frameworks, in one run on one machine.

Run:  .venv/bin/python bench/peers.py          (after `python3 scripts/dev.py setup`; needs
      PyPI the first time: it makes .venv-peers/ with the peers' pinned versions)

The same run for each: N turns (10, 50, 200) in which a deterministic model answers with
some text and one call of an async tool that does nothing, then a final answer; usage is
given by the model (no framework estimates it); in memory, nothing over a network; the
best of 5 runs, the collector paused (bench/peer_loops/timing.py). Each peer's own test double
or model interface drives it (bench/peer_loops/*_loop.py). agentfn's figure is its loop
benchmark's, which also makes two durable commits per turn to its in-memory store; of the
peers only LangGraph with its in-memory checkpointer keeps every step too.
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from loop_overhead import spec_for  # noqa: E402
from peer_loops.timing import SIZES, best_ms_per_turn  # noqa: E402

PEERS_VENV = ROOT / ".venv-peers"
#: The versions measured (the newest on PyPI on 2026-11-25).
PINNED = (
    "pydantic-ai-slim==2.68.0",
    "langgraph==1.2.24",
    "langgraph-prebuilt==1.1.3",
    "langchain-core==1.8.3",
    "strands-agents==1.62.0",
)
PEERS = (
    ("pydantic-ai 2.68 (FunctionModel)", ["pydantic_ai_loop.py"]),
    ("LangGraph 1.2 (prebuilt ReAct agent)", ["langgraph_loop.py"]),
    ("LangGraph 1.2 + InMemorySaver", ["langgraph_loop.py", "--saver"]),
    ("Strands Agents 1.62", ["strands_loop.py"]),
)


def peers_python() -> Path:
    python = PEERS_VENV / "bin" / "python"
    if not python.exists():
        venv.create(PEERS_VENV, with_pip=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    installed = subprocess.run([*pip, *PINNED], capture_output=True, text=True)
    if installed.returncode != 0:
        raise SystemExit(f"pip could not install the peers:\n{installed.stderr[-3000:]}")
    return python


def agentfn_prepare(turns: int) -> Callable[[], None]:
    import asyncio

    from runtime.engine.loop import Engine
    from runtime.store.memory import MemoryStore

    engine = Engine(spec_for(turns), MemoryStore())

    def run() -> None:
        head = asyncio.run(engine.run("a", "go"))
        assert head.status == "succeeded", head.error_message

    return run


def main() -> None:
    sizes = list(SIZES)
    print(f"framework time per turn, ms (best of 5; N = {', '.join(map(str, sizes))} turns)")
    figures = {
        "agentfn (2 durable commits per turn)": {
            n: best_ms_per_turn(agentfn_prepare, n) for n in sizes
        }
    }
    python = peers_python()
    for label, args in PEERS:
        script, *options = args
        command = [str(python), script, *options, *map(str, sizes)]
        done = subprocess.run(
            command, cwd=ROOT / "bench" / "peer_loops", check=True, capture_output=True, text=True
        )
        figures[label] = {
            int(n): ms for n, ms in json.loads(done.stdout.strip().splitlines()[-1]).items()
        }
    ours = figures["agentfn (2 durable commits per turn)"]
    print(f"  {'':40}" + "".join(f"{'N=' + str(n):>16}" for n in sizes))
    for label, by_size in figures.items():
        cells = "".join(f"{by_size[n]:9.3f} ({by_size[n] / ours[n]:4.1f}x)" for n in sizes)
        print(f"  {label:40}{cells}")


if __name__ == "__main__":
    main()
