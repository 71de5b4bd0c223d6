"""Whether two commits store the same bytes: deterministic runs (ids, tokens and the clock
fixed) of a few scenarios on the in-memory store, every item and object they leave compared.

    .venv/bin/python bench/stored_bytes.py --compare REV

A change that only makes the engine faster (issue 26, target 5) must leave these equal: the
same records (head documents, messages, events), index and session items, offloaded bodies
and cached outputs. Scenarios: the turn benchmark's run with an async and a sync tool (30
turns); parallel read-only calls, a failing tool, an output over the inline size, an
at_most_once call, bad arguments and an unknown tool; an output schema with a correction and
a continuation; max_turns reached; a doom loop. Tool durations (wall time) are zeroed.
`--compare REV` runs the same on `git archive REV` (runtime/ and bench/) in a subprocess.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import re
import secrets
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TOOLS = {
    "echo": {"handler": "engine_tools:echo", "effect": "read_only"},
    "aecho": {"handler": "engine_tools:aecho", "effect": "read_only"},
    "fail": {"handler": "engine_tools:fail", "effect": "idempotent"},
    "big": {"handler": "engine_tools:big", "effect": "read_only"},
    "charge": {"handler": "engine_tools:charge", "effect": "at_most_once"},
}
USAGE = {"input_tokens": 10, "output_tokens": 2}


def _fixed_ids() -> None:
    """uuid4 and token_hex from counters (an offload's attempt token is one constant: when it
    is drawn is an implementation detail, where the bodies go is not)."""
    ids, tokens = itertools.count(), itertools.count()
    uuid.uuid4 = lambda: uuid.UUID(int=next(ids))
    secrets.token_hex = lambda n=16: "a" * 2 * n if n == 6 else f"{next(tokens):0{2 * n}x}"


def _call(name: str, arguments: dict[str, Any], id: str = "") -> dict[str, Any]:
    return {"name": name, "arguments": arguments, **({"id": id} if id else {})}


def _scenarios() -> dict[str, Any]:
    from loop_overhead import spec_for

    from runtime.spec import AgentfnSpec

    def spec(script: list[dict[str, Any]], tools: list[str], **agent: Any) -> AgentfnSpec:
        return AgentfnSpec.model_validate(
            {
                "version": 1,
                "tools_package": "engine_tools",
                "models": {"m": {"provider": "scripted", "script": script}},
                "tools": {n: {"type": "python", "description": n, **TOOLS[n]} for n in tools},
                "agents": {"a": {"description": "t", "model": "m", "tools": tools, **agent}},
            }
        )

    answer = {"text": "a", "usage": USAGE}
    return {
        "bench_async": spec_for(30, "anoop"),
        "bench_sync": spec_for(30, "noop"),
        "tools": spec(
            [
                {
                    **answer,
                    "tool_calls": [_call("echo", {"text": "x"}), _call("aecho", {"text": "y"})],
                },
                {
                    "text": None,
                    "usage": USAGE,
                    "tool_calls": [
                        _call("fail", {"reason": "no"}, "c1"),
                        _call("big", {"size": 20000}),
                    ],
                },
                {**answer, "tool_calls": [_call("charge", {"amount": 3})]},
                {**answer, "tool_calls": [_call("echo", {"bad": 1}), _call("nosuch", {})]},
                {"text": '{"ok": 1}', "usage": USAGE},
            ],
            list(TOOLS),
        ),
        "schema": spec(
            [
                {"text": "not json", "usage": USAGE},
                {"text": '{"n": 2}', "usage": USAGE, "stop_reason": "max_tokens"},
                {"text": "", "usage": USAGE},
            ],
            ["echo"],
            output_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
        ),
        "max_turns": spec(
            [{**answer, "tool_calls": [_call("echo", {"text": str(i)})]} for i in range(5)],
            ["echo"],
            max_turns=3,
        ),
        "doom_loop": spec(
            [{**answer, "tool_calls": [_call("echo", {"text": "same"})]} for _ in range(5)],
            ["echo"],
        ),
    }


def stored() -> dict[str, Any]:
    """Every scenario's items, objects and result, for the tree this interpreter imports."""
    sys.path[:0] = [str(Path.cwd() / "bench"), str(ROOT / "tests" / "fixtures" / "engine")]
    _fixed_ids()
    from runtime.clock import FakeClock
    from runtime.engine.loop import Engine
    from runtime.store.memory import MemoryStore

    out: dict[str, Any] = {}
    for name, spec in _scenarios().items():
        store = MemoryStore()
        engine = Engine(spec, store, clock=FakeClock())
        head = asyncio.run(engine.run("a", "hello"))
        out[name] = {
            "status": head.status,
            "items": {f"{pk}|{sk}": item for (pk, sk), item in sorted(store.items.items())},
            "objects": {k: v.decode() for k, v in sorted(store.blobs.objects.items())},
            "result": engine.result(head.run_id),
        }
    text = json.dumps(out, sort_keys=True, default=str)
    return dict(json.loads(re.sub(r'(duration_ms\\*": ?)\d+', r"\g<1>0", text)))


def _stored_in(tree: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--json"],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
        text=True,
    )
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _first_difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    for part in ("status", "items", "objects", "result"):
        if a[part] == b[part]:
            continue
        if not isinstance(a[part], dict) or part == "result":
            return part
        keys = sorted(set(a[part]) | set(b[part]))
        key = next(k for k in keys if a[part].get(k) != b[part].get(k))
        return f"{part} {key}"
    return ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", metavar="REV", help="check this commit stores the same")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(stored()))
        return
    mine = _stored_in(ROOT)
    theirs: dict[str, Any] = {}
    if args.compare:
        from turn_cost import _tree_of

        with tempfile.TemporaryDirectory() as folder:
            theirs = _stored_in(_tree_of(args.compare, Path(folder)))
    for name, found in mine.items():
        digest = hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()[:16]
        counts = f"{len(found['items'])} items, {len(found['objects'])} objects"
        line = f"  {name:12} {found['status']:10} {counts:22} {digest}"
        if theirs:
            differs = _first_difference(theirs[name], found)
            line += f"  {'same as ' + args.compare if not differs else 'DIFFERS: ' + differs}"
        print(line)
    if theirs and any(_first_difference(theirs[n], mine[n]) for n in mine):
        sys.exit(1)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
