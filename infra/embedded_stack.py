"""The whole stack on one machine: the generated template's state machines executing under
moto, their Lambda tasks dispatched to the real handlers in process (DESIGN §8).

Used by `agentfn dev` and the end-to-end tests. The state machine definitions come from the
template `agentfn build` generates (so what runs locally is what deploys), with the agent
functions' ARNs substituted the way CloudFormation would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from infra.local import LOCAL_REGION, AwsClients
from infra.local_lambda import register
from infra.naming import agent_function_id, agent_state_machine_id
from infra.sam.template import build_template
from runtime.engine.loop import Engine
from runtime.service import RunService, Stack
from runtime.spec import AgentfnSpec

ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/agentfn-local"


def function_arn(agent: str) -> str:
    return f"arn:aws:lambda:{LOCAL_REGION}:{ACCOUNT}:function:{agent_function_id(agent)}"


def definitions(spec: AgentfnSpec, template_path: Path | None = None) -> dict[str, dict[str, Any]]:
    """agent → state machine definition, read from template.yaml when given (else generated)."""
    if template_path is not None:
        template = yaml.safe_load(template_path.read_text(encoding="utf-8"))
    else:
        template = build_template(spec)
    resources = template["Resources"]
    return {
        agent: resources[agent_state_machine_id(agent)]["Properties"]["Definition"]
        for agent in spec.agents
    }


@dataclass
class EmbeddedStack:
    spec: AgentfnSpec
    clients: AwsClients
    template_path: Path | None = None
    engine_options: dict[str, Any] = field(default_factory=dict)
    service: RunService = field(init=False)

    def __post_init__(self) -> None:
        import boto3

        import handlers.step

        sfn = boto3.client("stepfunctions", region_name=LOCAL_REGION)
        events = boto3.client("events", region_name=LOCAL_REGION)
        machines: dict[str, str] = {}
        for agent, definition in definitions(self.spec, self.template_path).items():
            text = json.dumps(definition).replace("${AgentFunctionArn}", function_arn(agent))
            name = agent_state_machine_id(agent)
            existing = [m for m in sfn.list_state_machines()["stateMachines"] if m["name"] == name]
            if existing:
                machines[agent] = existing[0]["stateMachineArn"]
                sfn.update_state_machine(stateMachineArn=machines[agent], definition=text)
            else:
                machines[agent] = sfn.create_state_machine(
                    name=name, definition=text, roleArn=ROLE, type="STANDARD"
                )["stateMachineArn"]
        stack = Stack(
            state_machines=machines,
            agent_functions={a: function_arn(a) for a in self.spec.agents},
            event_bus=self.spec.deployment.event_bus,
        )
        engine = Engine(
            self.spec,
            self.clients.store(),
            lambda_client=lambda: self.clients.lambda_,
            **self.engine_options,
        )
        self.service = RunService(
            engine, stack, sfn=sfn, lambda_client=self.clients.lambda_, events=events
        )
        handlers.step.configure(self.service)
        for agent in self.spec.agents:
            register(function_arn(agent), handlers.step.handler)

    def execution(self, run_id: str) -> dict[str, Any]:
        """The run's Step Functions execution (describe_execution)."""
        head = self.service.engine.store.load_head(run_id)
        arn = self.service._execution_arn(head)
        described: dict[str, Any] = self.service.sfn.describe_execution(executionArn=arn)
        return described
