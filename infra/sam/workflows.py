"""Per workflow: its function (the state machine's tasks) and its Standard state machine.

Least privilege: the workflow's function may create, read and start runs of its steps'
agents only (their run and session partitions, their objects, their state machines) and
its own workflow runs (`WF#{workflow tag}…`); the state machine may invoke that function
only. So a workflow can start exactly the agents its steps name.
"""

from __future__ import annotations

from typing import Any

from infra.sam import snapstart, workflow_asl
from infra.sam.data import BUCKET, TABLE
from infra.sam.grants import allow
from infra.sam.iam import model_statements
from infra.sam.intrinsics import arn, get_arn, sub
from infra.sam.naming import (
    agent_physical_name,
    workflow_function_id,
    workflow_physical_name,
)
from runtime.naming import agent_tag
from runtime.spec import AgentfnSpec
from runtime.workflows.records import workflow_tag


def workflow_statements(spec: AgentfnSpec, workflow: str) -> list[dict[str, Any]]:
    agents = spec.workflows[workflow].agents()
    models = spec.workflows[workflow].models()
    tags = [agent_tag(a) for a in agents]
    keys = [f"WF#{workflow_tag(workflow)}*", *(f"RUN#{t}*" for t in tags)]
    keys += [f"SES#{a}#*" for a in agents]
    statements = [
        allow(
            "StepRunsAndWorkflowRuns",
            ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem"],
            get_arn(TABLE),
            **{"ForAllValues:StringLike": {"dynamodb:LeadingKeys": keys}},
        )
    ]
    if agents:  # a workflow of llm steps only starts no run: no empty Resource lists
        statements += [
            allow(
                "StepRunObjects",
                ["s3:GetObject", "s3:PutObject"],
                [
                    sub(f"${{{BUCKET}.Arn}}/{kind}/{t}*")
                    for t in tags
                    for kind in ("bodies", "results")
                ],
            ),
            allow(
                "StartStepRuns",
                "states:StartExecution",
                [arn("states", f"stateMachine:{agent_physical_name(a)}") for a in agents],
            ),
            # Resume a step's wait when its run ended before the token was kept.
            allow("ResumeStepWaits", "states:SendTaskSuccess", "*"),
        ]
    return [*statements, *_llm_statements(spec, workflow, models)]


def _llm_statements(spec: AgentfnSpec, workflow: str, models: list[str]) -> list[dict[str, Any]]:
    """`llm` steps: their models (and secrets), and their answers' objects, kept under the
    workflow's own runs (runtime.workflows.llm_step.result_key)."""
    if not models:
        return []
    own = sub(f"${{{BUCKET}.Arn}}/results/{workflow_tag(workflow)}*")
    return [
        allow("LlmStepAnswers", ["s3:GetObject", "s3:PutObject"], own),
        *model_statements(spec, models, "LlmSteps"),
    ]


def workflow_function(spec: AgentfnSpec, workflow: str) -> dict[str, Any]:
    config = spec.workflows[workflow]
    props: dict[str, Any] = {
        "FunctionName": sub(workflow_physical_name(workflow)),
        "Description": f"agentfn workflow {workflow!r}: {config.description}"[:256],
        "Handler": "handlers.workflow.handler",
        "Environment": {"Variables": {"AGENTFN_WORKFLOW": workflow}},
        # an llm step's call waits for its model (retries, fallbacks) inside the task
        "Timeout": 900 if config.models() else 60,
        "Policies": [{"Statement": workflow_statements(spec, workflow)}],
    }
    return {"Type": "AWS::Serverless::Function", "Properties": props}


def workflow_state_machine(
    spec: AgentfnSpec, workflow: str, definition_uri: str | None = None
) -> dict[str, Any]:
    """The workflow's state machine; its definition inline, or in the file `definition_uri`
    (relative to the template; `sam deploy` uploads it) when the template is large."""
    function_id = workflow_function_id(workflow)
    definition: dict[str, Any] = (
        {"DefinitionUri": definition_uri}
        if definition_uri
        else {"Definition": workflow_asl.definition(spec, workflow)}
    )
    props: dict[str, Any] = {
        "Name": sub(workflow_physical_name(workflow)),
        "Type": "STANDARD",
        **definition,
        "DefinitionSubstitutions": {"WorkflowFunctionArn": snapstart.invoke_arn(spec, function_id)},
        "Policies": [
            {
                "Statement": [
                    allow(
                        "InvokeWorkflowFunction",
                        "lambda:InvokeFunction",
                        snapstart.invoke_arn(spec, function_id),
                    )
                ]
            }
        ],
    }
    if spec.deployment.tracing:
        props["Tracing"] = {"Enabled": True}
    return {"Type": "AWS::Serverless::StateMachine", "Properties": props}
