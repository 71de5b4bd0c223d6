"""Names of generated resources, in one place so the validator and the emitter agree.

Logical ids (`AgentOrderSupportFunction`) are what the template refers to; physical names
follow the runtime's contract (runtime.naming): an agent's function and state machine are
both called `agentfn-{stack8}-{agent_resource_name(agent)}`, so the API and the sweeper
reach every agent from two prefixes and IAM scopes "this stack's agents" with one pattern.
"""

from __future__ import annotations

import re

from infra.sam.intrinsics import STACK8_VAR
from runtime.naming import agent_resource_name, workflow_resource_name

#: Physical-name prefix of this stack's agent functions and state machines (an Fn::Sub text).
NAME_PREFIX = f"agentfn-{STACK8_VAR}-"


def logical_id(name: str) -> str:
    """CloudFormation-safe PascalCase id for an agent name (`order-support` → `OrderSupport`)."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]", name) if part)


def agent_function_id(agent: str) -> str:
    return f"Agent{logical_id(agent)}Function"


def agent_state_machine_id(agent: str) -> str:
    return f"Agent{logical_id(agent)}StateMachine"


def agent_physical_name(agent: str) -> str:
    """The agent's function and state machine name, as Fn::Sub text (`${Stack8}` inside)."""
    return NAME_PREFIX + agent_resource_name(agent)


def workflow_function_id(workflow: str) -> str:
    return f"Workflow{logical_id(workflow)}Function"


def workflow_state_machine_id(workflow: str) -> str:
    return f"Workflow{logical_id(workflow)}StateMachine"


def workflow_physical_name(workflow: str) -> str:
    """The workflow's function and state machine name (`…-_wf-{name}`), as Fn::Sub text."""
    return NAME_PREFIX + workflow_resource_name(workflow)
