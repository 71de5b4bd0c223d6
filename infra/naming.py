"""Names of generated resources, in one place so the validator and the emitter agree."""

from __future__ import annotations

import re


def logical_id(name: str) -> str:
    """CloudFormation-safe PascalCase id for an agent name (`order-support` → `OrderSupport`)."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]", name) if part)


def agent_function_id(agent: str) -> str:
    return f"Agent{logical_id(agent)}Function"


def agent_state_machine_id(agent: str) -> str:
    return f"Agent{logical_id(agent)}StateMachine"
