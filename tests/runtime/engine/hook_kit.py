"""Building blocks for hook tests: specs with hooks at every level, the events they left."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from runtime.engine.loop import Engine
from runtime.messages import ToolResultMessage
from runtime.spec import AgentfnSpec
from tests.runtime.engine.kit import make_spec

#: The python hooks of the test tools package (on sys.path once kit is imported).
policy: Any = importlib.import_module("engine_tools.policy")

DECIDE = "engine_tools.policy:decide"


def hooked(
    script: list[dict[str, Any]],
    *,
    tools: list[str],
    top: Sequence[dict[str, Any]] = (),
    defaults: Sequence[dict[str, Any]] = (),
    agent: Sequence[dict[str, Any]] = (),
    secrets: Sequence[str] = (),
    **config: Any,
) -> AgentfnSpec:
    """make_spec's agent `a`, with hooks at the top level, in defaults and on the agent."""
    data = make_spec(script, tools=tools, hooks=list(agent), **config).to_compiled()
    data["hooks"] = list(top)
    data["secrets"] = {name: {} for name in secrets}
    data["defaults"]["hooks"] = list(defaults)  # type: ignore[index]
    return AgentfnSpec.model_validate(data)


def rule(event: str = "pre_tool_use", **rule_fields: Any) -> dict[str, Any]:
    hook: dict[str, Any] = {"event": event, "type": "rule", "rules": [rule_fields]}
    return hook


def python(event: str, handler: str = DECIDE, **fields: Any) -> dict[str, Any]:
    return {"event": event, "type": "python", "handler": handler, **fields}


def hook_events(engine: Engine, run_id: str) -> list[dict[str, Any]]:
    return [
        e.data for e in engine.store.list_events(run_id, limit=1000) if e.type == "hook_decision"
    ]


def event_types(engine: Engine, run_id: str) -> list[str]:
    return [e.type for e in engine.store.list_events(run_id, limit=1000)]


def results(engine: Engine, run_id: str) -> list[ToolResultMessage]:
    head = engine.store.load_head(run_id)
    return [m for m in engine.store.load_messages(head) if isinstance(m, ToolResultMessage)]


def model_saw(engine: Engine, call_number: int) -> list[Any]:
    """The messages the scripted model was sent in its `call_number`-th request."""
    model = engine._model_cache["m"]
    return list(model.requests[call_number].messages)  # type: ignore[attr-defined]
