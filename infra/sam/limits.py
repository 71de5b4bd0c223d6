"""CloudFormation's per-stack limits, checked by `agentfn build` on what CloudFormation would
deploy: the template *after* the SAM transform, where one `AWS::Serverless::Function` is a
function, its role and a permission or a rule per event. A stack over a limit fails only in
CloudFormation, after `sam build` and an upload; here it fails at build, with its figures.

The transform is not run (it is the SAM CLI's, in another environment): `expand` counts what
it makes, rule by rule, from the generated template itself, so whatever a module of
infra/sam adds is counted as it is. A construct whose expansion is not modelled here raises
`UnknownExpansion` rather than being guessed; tests/infra/sam/test_stack_limits.py checks the
rules against the real transform (the demo, the full fixture, generated stacks of 1-130
agents and a catalogue of every modelled construct).

Limits (AWS CloudFormation quotas): 500 resources, 200 outputs, 200 parameters and 200
mappings per template. `sam deploy` always uploads the template to S3 (it needs a bucket
for anything over the 51,200-byte direct body), so the body limit is the S3 one, 1 MB, and
it applies to the uploaded template and to the processed one (after the transform; its
JSON). 1 MB is taken as 1,000,000 bytes, the stricter reading. IAM roles are an account
quota (1,000 by default) that every stack and user shares, so a stack taking a large share
of it is a warning, not an error.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from infra.sam import machine_role

RESOURCES = 500
OUTPUTS = 200
PARAMETERS = 200
MAPPINGS = 200
TEMPLATE_BYTES = 1_000_000
ACCOUNT_ROLES = 1_000
#: A stack with more roles than this share of the account's default quota gets a warning.
ROLE_SHARE_WARNING = 0.2

ROLE = "AWS::IAM::Role"
PERMISSION = "AWS::Lambda::Permission"
RULE = "AWS::Events::Rule"
_REST_API = ["AWS::ApiGateway::RestApi", "AWS::ApiGateway::Deployment", "AWS::ApiGateway::Stage"]

#: Upper bounds of the bytes the transform writes for each resource it adds, over what the
#: template already holds (a role's trust policy and tags, a permission, a REST API path):
#: the processed size is estimated from them; the tests check the estimate stays above the
#: real size and close to it.
_ADDED_BYTES = {
    ROLE: 700,
    PERMISSION: 420,
    RULE: 320,
    "AWS::ApiGateway::Deployment": 250,
    "AWS::ApiGateway::Stage": 400,
    "AWS::Lambda::LayerVersion": 60,
    # AutoPublishAlias (deployment.snapstart): the version (its logical id ends in a hash of
    # the code) and the alias, each about 150-230 bytes measured
    "AWS::Lambda::Version": 250,
    "AWS::Lambda::Alias": 300,
}
_API_PATH_BYTES = 700  # one Api event's path and method in the REST API's OpenAPI body


class UnknownExpansion(ValueError):
    """The template uses a SAM construct this module cannot count: teach `expand` (and its
    test) how the transform expands it, rather than guess."""


@dataclass
class StackFigures:
    resources: Counter[str]  # CloudFormation type -> how many, after the transform
    outputs: int
    parameters: int
    mappings: int
    body_bytes: int  # the template as uploaded
    processed_bytes: int  # an upper bound of the processed template's JSON

    @property
    def resource_count(self) -> int:
        return sum(self.resources.values())

    @property
    def roles(self) -> int:
        return self.resources[ROLE]


@dataclass
class LimitReport:
    figures: StackFigures
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # choices build made to fit, said once


def expand(template: dict[str, Any]) -> Counter[str]:
    """CloudFormation type -> count of the resources the SAM transform makes of `template`."""
    found: Counter[str] = Counter()
    implicit: set[str] = set()  # resources SAM makes once per template (the implicit API)
    function_globals = (template.get("Globals") or {}).get("Function") or {}
    for logical_id, resource in template.get("Resources", {}).items():
        kind = resource.get("Type", "")
        if "Connectors" in resource:
            raise UnknownExpansion(f"{logical_id}: SAM Connectors are not counted")
        props = resource.get("Properties") or {}
        if kind == "AWS::Serverless::Function":
            found.update(_function(logical_id, {**function_globals, **props}, implicit))
        elif kind == "AWS::Serverless::StateMachine":
            found.update(_state_machine(logical_id, props))
        elif kind == "AWS::Serverless::Api":
            _refuse(logical_id, props, ("Domain",))
            auth = props.get("Auth") or {}
            _refuse(logical_id, auth, ("UsagePlan",))
            for name, authorizer in (auth.get("Authorizers") or {}).items():
                if "FunctionArn" in authorizer:
                    raise UnknownExpansion(f"{logical_id}: Lambda authorizer {name} not counted")
            found.update(_REST_API)
        elif kind == "AWS::Serverless::LayerVersion":
            found["AWS::Lambda::LayerVersion"] += 1
        elif kind.startswith("AWS::Serverless::"):
            raise UnknownExpansion(f"{logical_id}: {kind} is not counted")
        else:
            found[kind] += 1
    if "api" in implicit:
        found.update(_REST_API)
    return found


def _refuse(logical_id: str, props: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        if props.get(key):
            raise UnknownExpansion(f"{logical_id}: {key} is not counted")


def _function(logical_id: str, props: dict[str, Any], implicit: set[str]) -> list[str]:
    _refuse(logical_id, props, ("FunctionUrlConfig", "DeploymentPreference", "EventInvokeConfig"))
    made = ["AWS::Lambda::Function"]
    if not props.get("Role"):
        made.append(ROLE)
    if props.get("AutoPublishAlias"):
        made += ["AWS::Lambda::Version", "AWS::Lambda::Alias"]
    for name, event in (props.get("Events") or {}).items():
        kind, event_props = event.get("Type"), event.get("Properties") or {}
        if kind == "Api":
            made.append(PERMISSION)
            if "RestApiId" not in event_props:
                implicit.add("api")
        elif kind in ("Schedule", "CloudWatchEvent", "EventBridgeRule"):
            _refuse(f"{logical_id}.{name}", event_props, ("DeadLetterConfig",))
            made += [RULE, PERMISSION]
        elif kind in ("SQS", "Kinesis", "DynamoDB"):
            made.append("AWS::Lambda::EventSourceMapping")
        else:
            raise UnknownExpansion(f"{logical_id}: a function's {kind} event is not counted")
    return made


def _state_machine(logical_id: str, props: dict[str, Any]) -> list[str]:
    made = ["AWS::StepFunctions::StateMachine"]
    if not props.get("Role"):
        made.append(ROLE)
    if props.get("AutoPublishAlias"):
        made += ["AWS::StepFunctions::StateMachineVersion", "AWS::StepFunctions::StateMachineAlias"]
    for name, event in (props.get("Events") or {}).items():
        kind, event_props = event.get("Type"), event.get("Properties") or {}
        if kind in ("Schedule", "CloudWatchEvent", "EventBridgeRule"):
            _refuse(f"{logical_id}.{name}", event_props, ("DeadLetterConfig",))
            made.append(RULE)
            if not event_props.get("RoleArn"):
                made.append(ROLE)
        else:
            raise UnknownExpansion(f"{logical_id}: a state machine's {kind} event is not counted")
    return made


def _compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def processed_bytes(template: dict[str, Any], resources: Counter[str]) -> int:
    """An upper bound of the processed template's size (compact JSON): the template with
    what the transform rewrites measured as it writes it, plus what each added resource
    takes. Inline state machine definitions are the large part: SAM writes each as lines of
    JSON indented by four, joined (`Fn::Join`), about 2.5 times its compact size."""
    total = _compact({k: v for k, v in template.items() if k != "Resources"})
    function_globals = _compact((template.get("Globals") or {}).get("Function") or {})
    for resource in template.get("Resources", {}).values():
        props = resource.get("Properties") or {}
        if resource.get("Type") == "AWS::Serverless::StateMachine" and "Definition" in props:
            lines = json.dumps(
                props["Definition"], sort_keys=True, indent=4, separators=(",", ": ")
            ).split("\n")
            rest = {k: v for k, v in props.items() if k != "Definition"}
            total += _compact(rest) + _compact({"Fn::Join": ["\n", lines]}) + 100
            continue
        total += _compact(resource)
        if resource.get("Type") == "AWS::Serverless::Function":
            total += function_globals  # the Globals are written into every function
            events = (props.get("Events") or {}).values()
            total += _API_PATH_BYTES * sum(1 for e in events if e.get("Type") == "Api")
    return total + sum(_ADDED_BYTES.get(kind, 0) * n for kind, n in resources.items())


def figures(template: dict[str, Any], body: str) -> StackFigures:
    resources = expand(template)
    return StackFigures(
        resources=resources,
        outputs=len(template.get("Outputs") or {}),
        parameters=len(template.get("Parameters") or {}),
        mappings=len(template.get("Mappings") or {}),
        body_bytes=len(body.encode()),
        processed_bytes=processed_bytes(template, resources),
    )


_SPLIT = (
    "split the agents across several specs, one stack each (README: Deploying, Stack size limits)"
)


def check(template: dict[str, Any], body: str, agents: int, workflows: int) -> LimitReport:
    """Every per-stack limit `template` (rendered as `body`) would break, each as one
    sentence naming the limit, the count and what to do."""
    report = LimitReport(figures(template, body))
    f = report.figures
    size = f"{agents} agents, {workflows} workflows"
    if f.resource_count > RESOURCES:
        report.errors.append(
            f"{f.resource_count} resources after the SAM transform, over CloudFormation's "
            f"{RESOURCES} per stack ({size}); {_SPLIT}"
        )
    if f.outputs > OUTPUTS:
        report.errors.append(
            f"{f.outputs} outputs, over CloudFormation's {OUTPUTS} per stack (one per agent "
            f"and workflow; {size}); {_SPLIT}"
        )
    if f.parameters > PARAMETERS:
        report.errors.append(
            f"{f.parameters} parameters, over CloudFormation's {PARAMETERS} per stack"
        )
    if f.mappings > MAPPINGS:
        report.errors.append(f"{f.mappings} mappings, over CloudFormation's {MAPPINGS} per stack")
    for measured, what in ((f.body_bytes, "template"), (f.processed_bytes, "processed template")):
        if measured > TEMPLATE_BYTES:
            report.errors.append(
                f"the {what} takes {measured:,} bytes, over CloudFormation's "
                f"{TEMPLATE_BYTES:,} (1 MB) for a template uploaded to S3 ({size}); {_SPLIT}"
            )
    if machine_role.shared(template):
        report.notes.append(machine_role.NOTE.format(agents=agents))
    if f.roles > ACCOUNT_ROLES * ROLE_SHARE_WARNING:
        report.warnings.append(
            f"the stack creates {f.roles} IAM roles; an account has {ACCOUNT_ROLES:,} by "
            "default, shared by every stack and user: check what is left (Service Quotas, IAM "
            "roles) before deploying it, and before each further copy of it (another stage)"
        )
    return report
