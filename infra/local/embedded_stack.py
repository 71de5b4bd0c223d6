"""The whole stack on one machine: the generated template's state machines executing under
moto, their Lambda tasks dispatched to the real handlers in process (DESIGN §8).

Used by `agentfn dev` and the end-to-end tests. The state machine definitions come from the
template `agentfn build` generates (so what runs locally is what deploys), with the agent
functions' ARNs substituted the way CloudFormation would.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from infra.local.aws import LOCAL_IDEMPOTENCY_TABLE, LOCAL_REGION, AwsClients
from infra.local.local_lambda import register
from infra.local.takeover import SharedStateService
from infra.sam import asl, workflow_asl
from infra.sam.naming import agent_state_machine_id, workflow_state_machine_id
from runtime.engine.loop import Engine
from runtime.service import RunService
from runtime.spec import AgentfnSpec
from runtime.stack import Stack
from runtime.workflows.service import WorkflowService

ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/agentfn-local"
#: The local stack's names, shaped like a deployed stack's (`agentfn-{stack id}-`).
PREFIX = "agentfn-local-"
LOCAL_STACK = Stack(
    function_prefix=PREFIX,
    state_machine_prefix=f"arn:aws:states:{LOCAL_REGION}:{ACCOUNT}:stateMachine:{PREFIX}",
)


def function_arn(agent: str) -> str:
    return f"arn:aws:lambda:{LOCAL_REGION}:{ACCOUNT}:function:{LOCAL_STACK.function(agent)}"


def definitions(spec: AgentfnSpec, template_path: Path | None = None) -> dict[str, dict[str, Any]]:
    """agent → state machine definition, read from template.yaml when given (else generated)."""
    if template_path is None:
        return {agent: asl.definition(spec, agent) for agent in spec.agents}
    template = yaml.safe_load(template_path.read_text(encoding="utf-8"))
    resources = template["Resources"]
    found: dict[str, dict[str, Any]] = {}
    for agent in spec.agents:
        props = resources[agent_state_machine_id(agent)]["Properties"]
        if "Definition" in props:
            found[agent] = props["Definition"]
        else:  # a large template keeps definitions in files beside it (DefinitionUri)
            uri = template_path.parent / props["DefinitionUri"]
            found[agent] = json.loads(uri.read_text(encoding="utf-8"))
    return found


def workflow_function_arn(workflow: str) -> str:
    name = LOCAL_STACK.workflow_function(workflow)
    return f"arn:aws:lambda:{LOCAL_REGION}:{ACCOUNT}:function:{name}"


def workflow_definitions(
    spec: AgentfnSpec, template_path: Path | None = None
) -> dict[str, dict[str, Any]]:
    """workflow → state machine definition, read from template.yaml when given."""
    if template_path is None:
        return {name: workflow_asl.definition(spec, name) for name in spec.workflows}
    resources = yaml.safe_load(template_path.read_text(encoding="utf-8"))["Resources"]
    return {
        name: resources[workflow_state_machine_id(name)]["Properties"]["Definition"]
        for name in spec.workflows
    }


@dataclass
class EmbeddedStack:
    spec: AgentfnSpec
    clients: AwsClients
    template_path: Path | None = None
    engine_options: dict[str, Any] = field(default_factory=dict)
    service: RunService = field(init=False)  # the API's
    step_services: dict[str, RunService] = field(init=False)  # each agent function's

    def __post_init__(self) -> None:
        import logging

        # moto's interpreter logs every Fail state it reaches (a failed run, a failed
        # workflow: outcomes, not faults) as an ERROR with the whole parsed state machine.
        logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)

        import handlers.step
        import handlers.workflow

        sfn = self.clients.make("stepfunctions")
        events = self.clients.make("events")
        existing = {m["name"] for m in sfn.list_state_machines()["stateMachines"]}
        for agent, definition in definitions(self.spec, self.template_path).items():
            text = json.dumps(definition).replace("${AgentFunctionArn}", function_arn(agent))
            arn = LOCAL_STACK.state_machine(agent)
            assert arn is not None
            name = arn.rpartition(":")[2]
            if name in existing:
                sfn.update_state_machine(stateMachineArn=arn, definition=text)
            else:
                created = sfn.create_state_machine(
                    name=name, definition=text, roleArn=ROLE, type="STANDARD"
                )
                assert created["stateMachineArn"] == arn, created["stateMachineArn"]
        self._create_workflow_machines(sfn, existing)
        stack = dataclasses.replace(LOCAL_STACK, event_bus=self.spec.deployment.event_bus)

        # As deployed: the API and each agent's function are different processes with their
        # own engines (lease owners), sharing only the store; an agent's function runs only
        # its own agent's code (a handoff moves the run to the next agent's function).
        # In process (moto for everything), Lambda tools are moto's functions too; on the
        # local server (infra.local.aws.local_aws) only the stack's own functions are
        # emulated, and a tool's function, named by its ARN, is the user's, in real AWS.
        tools_lambda = (lambda: self.clients.lambda_) if self.clients.endpoint is None else None
        # On the local state other processes share it (`agentfn run`, `agentfn approve`, dev):
        # a decision on a run whose execution lived elsewhere takes the run over here.
        kind = RunService if self.clients.endpoint is None else SharedStateService

        def service(scope: str | None) -> RunService:
            engine = Engine(
                self.spec,
                self.clients.store(),
                lambda_client=tools_lambda,
                scope=scope,
                **self.engine_options,
            )
            return kind(
                engine,
                stack,
                sfn=sfn,
                lambda_client=self.clients.lambda_,
                events=events,
                agent=scope,
            )

        self.service = service(None)
        self.step_services = {agent: service(agent) for agent in self.spec.agents}
        for agent, step in self.step_services.items():
            register(function_arn(agent), handlers.step.handler_for(step))
        for workflow in self.spec.workflows:  # each with its own function, as deployed
            tasks = WorkflowService(service(None), workflow=workflow)
            register(workflow_function_arn(workflow), handlers.workflow.handler_for(tasks))

    def _create_workflow_machines(self, sfn: Any, existing: set[str]) -> None:
        for workflow, definition in workflow_definitions(self.spec, self.template_path).items():
            text = json.dumps(definition).replace(
                "${WorkflowFunctionArn}", workflow_function_arn(workflow)
            )
            arn = LOCAL_STACK.workflow_state_machine(workflow)
            assert arn is not None
            name = arn.rpartition(":")[2]
            if name in existing:
                sfn.update_state_machine(stateMachineArn=arn, definition=text)
            else:
                sfn.create_state_machine(name=name, definition=text, roleArn=ROLE, type="STANDARD")

    def set_events(self, events: Any) -> None:
        """Use this EventBridge client in the API and every agent function."""
        for service in (self.service, *self.step_services.values()):
            service.events = events

    def serve_api(self) -> None:
        """Route handlers.api to this stack: its service and its Idempotency-Key table."""
        import handlers.api
        from handlers.api_starts import idempotency_store

        table = LOCAL_IDEMPOTENCY_TABLE
        handlers.api.configure(
            self.service, idempotency=idempotency_store(table, self.clients.dynamodb)
        )

    def execution(self, run_id: str) -> dict[str, Any]:
        """The run's Step Functions execution (describe_execution)."""
        head = self.service.engine.store.load_head(run_id)
        arn = self.service._execution_arn(head)
        described: dict[str, Any] = self.service.sfn.describe_execution(executionArn=arn)
        return described
