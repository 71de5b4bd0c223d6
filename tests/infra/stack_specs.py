"""Generated specs of any number of agents shaped like the demo's: a Bedrock model with a
fallback, built-in and Lambda tools, an approval rule, a structured output and teams (every
fourth agent ends a chain of sub-agents). Used by the stack-limit tests and
bench/stack_limits.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from infra.checks.validate import validate_file
from infra.sam.template import build_template


def agents_spec(count: int, workflows: int = 0) -> dict[str, Any]:
    """`count` agents, and `workflows` workflows of two steps (over agents i and i+1)."""
    names = [f"agent-{i:03d}" for i in range(count)]
    agents: dict[str, Any] = {}
    for i, name in enumerate(names):
        agents[name] = {
            "description": f"Agent {i}: looks orders up and refunds them.",
            "system_prompt": "You help customers with their orders. Today is {date}.",
            "tools": ["builtin:get_time_date", "builtin:storage_read", "refund"],
            "sub_agents": [names[i + 1]] if i % 4 != 3 and i + 1 < count else [],
            "approval": [{"tools": ["refund"], "timeout": "1h"}],
            "output_schema": {"type": "object", "properties": {"answer": {"type": "string"}}},
        }
    return {
        "version": 1,
        "defaults": {"model": "claude"},
        "models": {
            "claude": {
                "provider": "bedrock",
                "model_id": "us.anthropic.claude-sonnet-4-20250514-v1:0",
                "fallbacks": ["haiku"],
            },
            "haiku": {
                "provider": "bedrock",
                "model_id": "anthropic.claude-3-5-haiku-20241022-v1:0",
            },
        },
        "tools": {
            "refund": {
                "type": "lambda",
                "function_arn": "arn:aws:lambda:us-east-1:123456789012:function:refund",
                "description": "Refund an order.",
                "effect": "idempotent",
                "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            }
        },
        "agents": agents,
        "workflows": {
            f"flow-{i:03d}": {
                "input_schema": {
                    "type": "object",
                    "properties": {"order_id": {"type": "string"}},
                    "required": ["order_id"],
                },
                "steps": [
                    {"id": "look", "agent": names[i % count], "input": "Look {order_id} up."},
                    {"id": "refund", "agent": names[(i + 1) % count], "input": "Refund it."},
                ],
            }
            for i in range(workflows)
        },
    }


def write_spec(count: int, folder: Path, workflows: int = 0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "agents.yaml"
    spec = agents_spec(count, workflows)
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def template_of(path: Path) -> dict[str, Any]:
    result = validate_file(path)
    assert result.ok and result.spec is not None, [str(i) for i in result.issues]
    return build_template(result.spec)
