"""A workflow in the template: its own function and state machine, and least privilege — the
function may create and start runs of its steps' agents only, the state machine may invoke
that function only."""

from __future__ import annotations

import json
from typing import Any

from infra.sam.naming import workflow_function_id, workflow_state_machine_id
from infra.sam.template import build_template
from runtime.naming import agent_tag
from runtime.spec import AgentfnSpec
from runtime.workflows.records import workflow_tag
from tests.infra.cfn import function_statements


def _statements(resources: dict[str, Any], function_id: str) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in function_statements(resources, function_id)}


def test_the_workflow_function_reaches_its_steps_agents_only(demo_spec: AgentfnSpec) -> None:
    template = build_template(demo_spec)
    resources = template["Resources"]
    function = resources[workflow_function_id("damaged_order")]
    assert function["Properties"]["Handler"] == "handlers.workflow.handler"
    grants = _statements(resources, workflow_function_id("damaged_order"))
    steps_agents = ["orders", "researcher", "billing"]
    keys = grants["StepRunsAndWorkflowRuns"]["Condition"]["ForAllValues:StringLike"][
        "dynamodb:LeadingKeys"
    ]
    assert sorted(keys) == sorted(
        [f"WF#{workflow_tag('damaged_order')}*"]
        + [f"RUN#{agent_tag(a)}*" for a in steps_agents]
        + [f"SES#{a}#*" for a in steps_agents]
    )
    started = json.dumps(grants["StartStepRuns"]["Resource"])
    for agent in steps_agents:
        assert f"-{agent}" in started
    for other in ("support", "shipping", "assistant", "triage"):
        assert f'-{other}"' not in started and f"RUN#{agent_tag(other)}*" not in keys
    machine = resources[workflow_state_machine_id("damaged_order")]
    policy, delivery = machine["Properties"]["Policies"]  # its own; the log delivery's
    assert delivery == {"Ref": "StateMachineLogDelivery"}
    (invoke,) = policy["Statement"]
    assert invoke["Action"] == "lambda:InvokeFunction"
    assert invoke["Resource"] == {"Fn::GetAtt": [workflow_function_id("damaged_order"), "Arn"]}
    assert machine["Properties"]["DefinitionSubstitutions"] == {
        "WorkflowFunctionArn": {"Fn::GetAtt": [workflow_function_id("damaged_order"), "Arn"]}
    }


def test_only_ids_cross_the_workflow_state_machine(demo_spec: AgentfnSpec) -> None:
    definition = build_template(demo_spec)["Resources"][workflow_state_machine_id("damaged_order")][
        "Properties"
    ]["Definition"]
    text = json.dumps(definition)
    assert "{order_id}" not in text and "Refund" not in text  # templates stay in the spec
    runs = definition["States"]["check-Runs"]
    assert runs["Type"] == "Map" and runs["Iterator"]["States"]["check-Wait"]["Resource"].endswith(
        "waitForTaskToken"
    )


def test_an_llm_steps_workflow_function_calls_exactly_its_models() -> None:
    """The function of a workflow with `llm` steps may invoke their models (fallbacks too)
    and read their secrets, and write their answers under its own runs; no other model."""
    from infra.sam.workflows import workflow_function

    spec = AgentfnSpec.model_validate(
        {
            "version": 1,
            "secrets": {"openai_key": {"source": "secretsmanager"}},
            "models": {
                "claude": {
                    "provider": "bedrock",
                    "model_id": "anthropic.claude-3-haiku-20240307-v1:0",
                    "fallbacks": ["gpt"],
                },
                "gpt": {
                    "provider": "openai",
                    "model_id": "gpt-4o",
                    "api_key": "${secret:openai_key}",
                },
                "other": {"provider": "bedrock", "model_id": "amazon.nova-pro-v1:0"},
            },
            "agents": {"a": {"description": "d", "model": "other"}},
            "workflows": {
                "w": {"steps": [{"id": "s", "llm": {"model": "claude", "prompt": "{input}"}}]},
                "plain": {"steps": [{"id": "s", "agent": "a"}]},
            },
        }
    )
    function = workflow_function(spec, "w")
    grants = {s["Sid"]: s for p in function["Properties"]["Policies"] for s in p["Statement"]}
    bedrock = json.dumps(grants["LlmStepsBedrockModels"]["Resource"])
    assert "claude-3-haiku" in bedrock and "nova" not in bedrock
    assert "openai_key" in json.dumps(grants["LlmStepsSecretsManager"]["Resource"])
    answers = json.dumps(grants["LlmStepAnswers"]["Resource"])
    assert f"results/{workflow_tag('w')}*" in answers
    assert function["Properties"]["Timeout"] == 900
    assert "StartStepRuns" not in grants  # starts no run: no statement with no resource
    assert all(s["Resource"] for s in grants.values())
    plain_function = workflow_function(spec, "plain")
    plain = {s["Sid"] for p in plain_function["Properties"]["Policies"] for s in p["Statement"]}
    assert not any(sid.startswith("LlmStep") for sid in plain)
