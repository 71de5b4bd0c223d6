"""Building blocks for engine tests: specs from plain dicts, an engine on a memory store."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from runtime.clock import FakeClock
from runtime.engine.loop import Engine
from runtime.spec import AgentfnSpec
from runtime.store.base import RunHead
from runtime.store.memory import MemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures" / "engine"))
import engine_tools

CALLS = engine_tools.CALLS

TOOLS: dict[str, dict[str, Any]] = {
    "echo": {
        "type": "python",
        "handler": "engine_tools:echo",
        "description": "Echo text.",
        "effect": "read_only",
    },
    "aecho": {
        "type": "python",
        "handler": "engine_tools:aecho",
        "description": "Echo, async.",
        "effect": "read_only",
    },
    "fail": {
        "type": "python",
        "handler": "engine_tools:fail",
        "description": "Always fails.",
        "effect": "idempotent",
    },
    "slow": {
        "type": "python",
        "handler": "engine_tools:slow",
        "description": "Sleeps.",
        "effect": "idempotent",
        "timeout": 0.2,
    },
    "aslow": {
        "type": "python",
        "handler": "engine_tools:aslow",
        "description": "Sleeps, async.",
        "effect": "read_only",
    },
    "big": {
        "type": "python",
        "handler": "engine_tools:big",
        "description": "Big output.",
        "effect": "read_only",
    },
    "slow_charge": {
        "type": "python",
        "handler": "engine_tools:slow_charge",
        "description": "Charge money, slowly.",
        "effect": "at_most_once",
    },
    "charge": {
        "type": "python",
        "handler": "engine_tools:charge",
        "description": "Charge money.",
        "effect": "at_most_once",
        "input_schema": {
            "type": "object",
            "properties": {"amount": {"type": "number", "minimum": 0}},
            "required": ["amount"],
        },
    },
}


def make_spec(
    script: list[dict[str, Any]], *, tools: list[str] | None = None, **agent: Any
) -> AgentfnSpec:
    """One agent `a` on a scripted model `m`, with the named test tools."""
    names = tools if tools is not None else list(TOOLS)
    models: dict[str, Any] = {"m": {"provider": "scripted", "script": script}}
    models.update(agent.pop("models", {}))
    if "fallbacks" in agent:
        models["m"]["fallbacks"] = agent.pop("fallbacks")
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "engine_tools",
            "models": models,
            "tools": {n: TOOLS[n] for n in names if n in TOOLS},
            "agents": {"a": {"description": "test agent", "model": "m", "tools": names, **agent}},
        }
    )


def new_engine(spec: AgentfnSpec, store: MemoryStore | None = None, **kwargs: Any) -> Engine:
    kwargs.setdefault("clock", FakeClock())
    return Engine(spec, store if store is not None else MemoryStore(), **kwargs)


def run(engine: Engine, text: str = "hello", session_id: str | None = None) -> RunHead:
    CALLS.clear()
    return asyncio.run(engine.run("a", text, session_id))


def call(name: str, arguments: Any = None, id: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "arguments": arguments if arguments is not None else {}}
    if id:
        entry["id"] = id
    return entry
