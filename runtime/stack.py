"""How a process reaches the rest of the deployment: agent functions and state machines by
their fixed names, and the name of a run's current Step Functions execution."""

from __future__ import annotations

from dataclasses import dataclass

from runtime.naming import agent_resource_name, workflow_resource_name
from runtime.store.base import RunHead


@dataclass
class Stack:
    """How this process reaches the rest of the deployment.

    Agent functions and state machines have fixed physical names, `{prefix}{resource name}`
    (runtime.naming), so two prefixes reach every agent whatever their number. An empty
    prefix means "not deployed" (one process: tests, `agentfn run`).
    """

    function_prefix: str = ""  # agent function name = prefix + agent_resource_name(agent)
    state_machine_prefix: str = ""  # state machine ARN = prefix + agent_resource_name(agent)
    event_bus: str = "default"
    #: With SnapStart (`deployment.snapstart`) the functions are invoked by alias, never as
    #: `$LATEST`, which has no snapshot: `NAME:ALIAS` is what Lambda and IAM then see.
    function_alias: str = ""

    def function(self, agent: str) -> str | None:
        if not self.function_prefix:
            return None
        return self._qualified(self.function_prefix + agent_resource_name(agent))

    def state_machine(self, agent: str) -> str | None:
        if not self.state_machine_prefix:
            return None
        return self.state_machine_prefix + agent_resource_name(agent)

    def workflow_state_machine(self, workflow: str) -> str | None:
        if not self.state_machine_prefix:
            return None
        return self.state_machine_prefix + workflow_resource_name(workflow)

    def workflow_function(self, workflow: str) -> str | None:
        if not self.function_prefix:
            return None
        return self._qualified(self.function_prefix + workflow_resource_name(workflow))

    def _qualified(self, name: str) -> str:
        return f"{name}:{self.function_alias}" if self.function_alias else name


def execution_name(head: RunHead) -> str:
    """The run's current execution: `run_id`, then `run_id-N` after it continued anew."""
    return head.run_id if head.generation == 0 else f"{head.run_id}-{head.generation}"
