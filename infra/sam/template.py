"""The SAM template as plain data, assembled from one module per kind of resource
(data: tables and bucket; api: the REST API and its function; functions: agents, state
machines and the sweeper), with long-form intrinsics so the output is easy to diff and test.

Determinism: resources appear in a fixed order (shared resources, then agents in spec
order); nothing depends on time, the machine or dict iteration of unordered sources.

Size: what grows with the number of agents is only each agent's own resources (a function,
a state machine, and the role SAM makes for each) and one output. The API's environment
and IAM name the agents by the fixed-size patterns of runtime.naming, and every function
logs to one shared log group (LoggingConfig, JSON; Lambda puts the function's name in each
log stream's name), so a per-agent log group does not spend the stack's 500 resources:
100 agents take about 450 of them after the SAM transform (infra.sam.limits counts them).

The state machine definitions (agents' and workflows') are most of a template's bytes
(about 9 KB each, and SAM writes an inline one at 2.5 times that), and CloudFormation takes
at most 1 MB of template body, before and after the transform (infra.sam.limits). While
they are small in total they stay inline, so template.yaml is complete for review; past
DEFINITIONS_INLINE_LIMIT they go to files next to the template (`DefinitionUri`), which
`sam deploy` uploads to S3, and the body keeps only references.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from infra.sam import (
    api,
    asl,
    data,
    functions,
    layers,
    limits,
    live,
    machine_role,
    monitoring,
    native_alarms,
    roles,
    sandbox,
    snapstart,
    state_logs,
    triggers,
    workflow_asl,
    workflows,
)
from infra.sam.api import ACCESS_LOGS, API, API_FUNCTION
from infra.sam.data import BUCKET, IDEMPOTENCY_TABLE, TABLE, table_resource
from infra.sam.intrinsics import STACK8, arn, ref, sub
from infra.sam.naming import (
    NAME_PREFIX,
    agent_function_id,
    agent_state_machine_id,
    logical_id,
    workflow_function_id,
    workflow_state_machine_id,
)
from runtime.naming import agent_resource_name, agent_tag
from runtime.spec import AgentfnSpec

PACKAGE_DIR = ".agentfn/package"
STATE_MACHINES_DIR = ".agentfn/statemachines"
SPEC_FILE = "agentfn.spec.json"
FUNCTION_LOGS = "FunctionLogs"
#: Total size (compact JSON) of the inline definitions above which they go to files: about
#: 30 agents, whose template stays well under a third of CloudFormation's 1 MB.
DEFINITIONS_INLINE_LIMIT = 200_000


def definition_files(spec: AgentfnSpec) -> dict[str, dict[str, Any]]:
    """Path relative to the template → state machine definition (every agent's and
    workflow's), for the definitions that go to files; empty while they fit inline.
    Written by infra.sam.package.stage_package."""
    definitions = {agent_state_machine_id(a): asl.definition(spec, a) for a in spec.agents}
    for workflow in spec.workflows:
        definitions[workflow_state_machine_id(workflow)] = workflow_asl.definition(spec, workflow)
    size = sum(len(json.dumps(d, separators=(",", ":"))) for d in definitions.values())
    if size <= DEFINITIONS_INLINE_LIMIT:
        return {}
    return {definition_path(machine): definition for machine, definition in definitions.items()}


def definition_path(machine_id: str) -> str:
    return f"{STATE_MACHINES_DIR}/{machine_id}.asl.json"


def build_template(spec: AgentfnSpec, *, runtime: str | None = None) -> dict[str, Any]:
    _check_names(spec)
    runtime = runtime or spec.deployment.runtime
    snapped = snapstart.apply if snapstart.enabled(spec, runtime) else (lambda f: f)
    resources: dict[str, Any] = {}
    resources[TABLE] = table_resource()
    resources[IDEMPOTENCY_TABLE] = data.idempotency_table_resource()
    resources[BUCKET] = data.bucket(spec)
    resources[f"{BUCKET}Policy"] = data.bucket_policy()
    resources[FUNCTION_LOGS] = _log_group(spec, "functions")
    resources[API] = api.api(spec)
    if spec.deployment.access_logs:
        resources[ACCESS_LOGS] = _log_group(spec, "api-access")
    for layer in layers.layers(spec):
        resources[layer.logical_id] = layers.layer_resource(spec, layer, runtime)
    resources[API_FUNCTION] = snapped(
        layers.built_by_makefile(api.api_function(spec), layers.api_layers(spec))
    )
    resources[functions.SWEEPER] = layers.built_by_makefile(functions.sweeper_function(spec), [])
    resources.update(monitoring.resources(spec))  # dashboard and alarms: not per agent
    resources.update(sandbox.resources(spec))  # code_execute's, when an agent uses it
    resources.update(live.resources(spec))  # the WebSocket API of live runs
    resources[live.LIVE_FUNCTION] = snapped(
        layers.built_by_makefile(resources[live.LIVE_FUNCTION], [])
    )
    outputs: dict[str, Any] = {
        "ApiUrl": {
            "Description": "Base URL of the agentfn API",
            "Value": sub(
                f"https://${{{API}}}.execute-api.${{AWS::Region}}.${{AWS::URLSuffix}}/"
                f"{spec.deployment.stage_name}"
            ),
        },
        "StateTableName": {"Description": "Run state (DynamoDB)", "Value": ref(TABLE)},
        "DataBucketName": {
            "Description": "Tool outputs and large bodies (S3)",
            "Value": ref(BUCKET),
        },
        "FunctionLogGroup": {
            "Description": "Logs of every function (stream names start with the function's)",
            "Value": ref(FUNCTION_LOGS),
        },
    }
    outputs.update(monitoring.outputs(spec))
    outputs.update(live.outputs())
    files = definition_files(spec)
    for agent in spec.agents:
        function_id = agent_function_id(agent)
        machine_id = agent_state_machine_id(agent)
        extra = layers.agent_layers(spec, agent)
        resources[function_id] = snapped(
            layers.built_by_makefile(functions.agent_function(spec, agent), extra)
        )
        path = definition_path(machine_id)
        resources[machine_id] = functions.state_machine(spec, agent, path if files else None)
        outputs[f"Agent{logical_id(agent)}StateMachineArn"] = {
            "Description": f"State machine of agent {agent!r}",
            "Value": ref(machine_id),
        }
    for workflow in spec.workflows:
        function_id, machine_id = (
            workflow_function_id(workflow),
            workflow_state_machine_id(workflow),
        )
        resources[function_id] = snapped(
            layers.built_by_makefile(workflows.workflow_function(spec, workflow), [])
        )
        path = definition_path(machine_id)
        resources[machine_id] = workflows.workflow_state_machine(
            spec, workflow, path if files else None
        )
        outputs[f"Workflow{logical_id(workflow)}StateMachineArn"] = {
            "Description": f"State machine of workflow {workflow!r}",
            "Value": ref(machine_id),
        }
    for logical_id_, resource in triggers.resources(spec).items():  # schedules, queues, rules
        resources[logical_id_] = (
            layers.built_by_makefile(resource, [])
            if resource["Type"] == "AWS::Serverless::Function"
            else resource
        )
    # Over every function and state machine above: execution logs, alarms on the metrics
    # AWS emits, and each function's own role (logs on its log group only).
    state_logs.add_logging(spec, resources)
    resources.update(native_alarms.resources(spec, resources))
    roles.explicit_roles(spec, resources, FUNCTION_LOGS)
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Transform": "AWS::Serverless-2016-10-31",
        "Description": "agentfn serverless agents (generated by `agentfn build` from agents.yaml)",
        "Metadata": {"agentfn": {"spec_hash": spec.spec_hash(), "agents": list(spec.agents)}},
        "Globals": _globals(spec, runtime),
        "Resources": resources,
        "Outputs": outputs,
    }
    if len(spec.agents) > 1 and limits.expand(template).total() > limits.RESOURCES:
        machine_role.share(spec, resources)  # one role per agent would not fit
    return template


def _check_names(spec: AgentfnSpec) -> None:
    """IAM isolates agents by their tag and their physical name: two agents sharing either
    would share data or functions, so such a spec must not build."""
    for derive in (agent_tag, agent_resource_name):
        seen: dict[str, str] = {}
        for agent in spec.agents:
            other = seen.setdefault(derive(agent), agent)
            if other != agent:
                raise ValueError(f"agents {other!r} and {agent!r} share {derive.__name__}")


def _globals(spec: AgentfnSpec, runtime: str | None) -> dict[str, Any]:
    d = spec.deployment
    return {
        "Function": {
            "Runtime": runtime or d.runtime,
            "Architectures": [d.architecture],
            "CodeUri": PACKAGE_DIR,
            "Layers": [ref(layer.logical_id) for layer in layers.EVERY_FUNCTION],
            "MemorySize": spec.defaults.lambda_.memory,
            "Timeout": int(spec.defaults.lambda_.timeout),
            "Tracing": "Active" if d.tracing else "PassThrough",
            "LoggingConfig": {
                "LogFormat": "JSON",
                "LogGroup": ref(FUNCTION_LOGS),
                # Lambda's level wins over Powertools' (and filters its JSON lines): both.
                "ApplicationLogLevel": "WARN" if d.log_level == "WARNING" else d.log_level,
            },
            "Environment": {
                "Variables": {
                    "AGENTFN_TABLE": ref(TABLE),
                    "AGENTFN_BUCKET": ref(BUCKET),
                    "AGENTFN_EVENT_BUS": d.event_bus,
                    "AGENTFN_SPEC_HASH": spec.spec_hash(),
                    # runtime.naming: every agent's function and state machine by name.
                    "AGENTFN_FUNCTION_PREFIX": sub(NAME_PREFIX),
                    "AGENTFN_STATE_MACHINE_PREFIX": arn("states", f"stateMachine:{NAME_PREFIX}"),
                    "POWERTOOLS_SERVICE_NAME": "agentfn",
                    "POWERTOOLS_LOG_LEVEL": d.log_level,
                    "AGENTFN_STACK_NAME": ref("AWS::StackName"),  # the metrics' `service`
                    **snapstart.environment(spec),  # handoffs name the alias
                }
            },
        },
        # OpenAPI 3 keeps SAM from adding a stray stage named `Stage` next to ours.
        "Api": {"OpenApiVersion": "3.0.1"},
    }


def _log_group(spec: AgentfnSpec, kind: str) -> dict[str, Any]:
    # Logs are operational data with their own retention: deleting them with the stack is
    # the intended behaviour, stated explicitly.
    return {
        "Type": "AWS::Logs::LogGroup",
        "DeletionPolicy": "Delete",
        "UpdateReplacePolicy": "Delete",
        "Properties": {
            "LogGroupName": sub(f"/agentfn/${{AWS::StackName}}/{kind}"),
            "RetentionInDays": spec.deployment.log_retention_days,
        },
    }


class _Dumper(yaml.SafeDumper):
    """Block style, no aliases: the template is read by people in code review."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_dict(dumper: _Dumper, data: dict[str, Any]) -> yaml.Node:
    # The `Stack8` expression on one line: repeated hundreds of times in a large stack, in
    # block style it would take a fifth of a role's bytes, and CloudFormation counts them
    # against its 1 MB.
    flow = "Fn::Select" in data and data == STACK8
    return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=flow or None)


_Dumper.add_representer(dict, _represent_dict)


def render(template: dict[str, Any]) -> str:
    body = yaml.dump(
        template,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        width=120,
        allow_unicode=True,
    )
    return "# GENERATED by `agentfn build` from agents.yaml: edit agents.yaml and rebuild.\n" + body
