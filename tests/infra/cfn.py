"""Test tools for generated templates: the real SAM transform, intrinsic resolution (concrete
or pessimistic) and a small IAM evaluator for the statements agentfn emits.

The transform runs the SAM translator that the SAM CLI ships (.tools/sam), offline, the way
`sam validate` does: what CloudFormation would deploy, not what the SAM template says.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from tests.helpers import tool_path

_TRANSFORM = """
import json, sys
from samtranslator.translator.transform import transform

class NoManagedPolicies:
    def load(self):
        return {}

template = json.load(sys.stdin)
# Local artifacts become S3 locations, as `sam package` (and `sam validate`) make them.
template["Globals"]["Function"]["CodeUri"] = "s3://bucket/package.zip"
for resource in template["Resources"].values():
    for key in ("DefinitionUri", "ContentUri"):
        uri = resource.get("Properties", {}).get(key)
        if isinstance(uri, str) and not uri.startswith("s3://"):
            resource["Properties"][key] = "s3://bucket/" + uri
json.dump(transform(template, {}, NoManagedPolicies()), sys.stdout, sort_keys=True)
"""


def sam_transform(template: dict[str, Any]) -> dict[str, Any]:
    """The CloudFormation template SAM's translator makes of `template`."""
    python = Path(tool_path("sam")).parent / "python"
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0"}
    result = subprocess.run(
        [str(python), "-c", _TRANSFORM],
        input=json.dumps(template),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    transformed: dict[str, Any] = json.loads(result.stdout)
    return transformed


# -- intrinsics --------------------------------------------------------------------------

STACK_UUID = "0123abcd-1111-2222-3333-444455556666"
STACK8 = STACK_UUID[:8]
CONCRETE = {
    "AWS::Partition": "aws",
    "AWS::Region": "us-east-1",
    "AWS::AccountId": "123456789012",
    "AWS::StackName": "agentfn-demo",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackId": f"arn:aws:cloudformation:us-east-1:123456789012:stack/agentfn-demo/{STACK_UUID}",
}
#: The longest each pseudo parameter can be (partition aws-us-gov, 14-character regions,
#: 128-character stack names); references to resources count as long names and ARNs.
PESSIMISTIC = {
    "AWS::Partition": "aws-us-gov",
    "AWS::Region": "x" * 16,
    "AWS::AccountId": "1" * 12,
    "AWS::StackName": "S" * 128,
    "AWS::URLSuffix": "u" * 20,
    "AWS::StackId": f"arn:aws-us-gov:cloudformation:{'x' * 16}:{'1' * 12}:stack/{'S' * 128}/{STACK_UUID}",
}
PESSIMISTIC_NAME = "N" * 128
PESSIMISTIC_ARN = "A" * 200

_SUB_VAR = re.compile(r"\$\{([^}!][^}]*)\}")


class Resolver:
    """Resolves Ref, GetAtt, Sub, Join, Select and Split to text."""

    def __init__(
        self, pseudo: dict[str, str], ref: Callable[[str], str], attr: Callable[[str, str], str]
    ):
        self.pseudo, self.ref, self.attr = pseudo, ref, attr

    def __call__(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self(v) for v in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, value), *_ = node.items()
            if key == "Ref":
                return self.pseudo.get(value) or self.ref(value)
            if key == "Fn::GetAtt":
                name, attribute = value if isinstance(value, list) else value.split(".", 1)
                return self.attr(name, attribute)
            if key == "Fn::Sub":
                text, variables = (value, {}) if isinstance(value, str) else value
                return _SUB_VAR.sub(lambda m: self._variable(m.group(1), variables), text)
            if key == "Fn::Join":
                return value[0].join(str(self(v)) for v in self(value[1]))
            if key == "Fn::Select":
                return self(value[1])[int(value[0])]
            if key == "Fn::Split":
                return str(self(value[1])).split(value[0])
            assert not key.startswith("Fn::"), f"no resolution for {key}"
        return {k: self(v) for k, v in node.items()}

    def _variable(self, name: str, variables: dict[str, Any]) -> str:
        if name in variables:
            return str(self(variables[name]))
        if name in self.pseudo:
            return self.pseudo[name]
        if "." in name:
            return str(self.attr(*name.split(".", 1)))
        return str(self.ref(name))


def pessimistic() -> Resolver:
    return Resolver(PESSIMISTIC, lambda _: PESSIMISTIC_NAME, lambda _n, _a: PESSIMISTIC_ARN)


def concrete(template: dict[str, Any]) -> Resolver:
    """Physical names as CloudFormation would give them in stack `agentfn-demo`."""
    resources = template["Resources"]
    name_props = (
        "FunctionName",
        "StateMachineName",
        "Name",
        "TableName",
        "LogGroupName",
        "QueueName",
    )

    def ref(name: str) -> str:
        resource = resources[name]
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::Lambda::Alias":  # Ref is the ARN, qualified by the alias
            function = resolver(props["FunctionName"])
            return f"arn:aws:lambda:us-east-1:123456789012:function:{function}:{props['Name']}"
        for prop in name_props:
            if prop in props:
                value = str(resolver(props[prop]))
                break
        else:
            value = f"agentfn-demo-{name}-RANDOM1234"
        if resource["Type"] == "AWS::StepFunctions::StateMachine":  # Ref is the ARN
            return f"arn:aws:states:us-east-1:123456789012:stateMachine:{value}"

        return value

    def attr(name: str, attribute: str) -> str:
        kind = resources[name]["Type"]
        assert attribute == "Arn", (name, attribute)
        arns = {
            "AWS::Lambda::Function": "arn:aws:lambda:us-east-1:123456789012:function:{}",
            "AWS::Serverless::Function": "arn:aws:lambda:us-east-1:123456789012:function:{}",
            "AWS::DynamoDB::Table": "arn:aws:dynamodb:us-east-1:123456789012:table/{}",
            "AWS::S3::Bucket": "arn:aws:s3:::{}",
            "AWS::Logs::LogGroup": "arn:aws:logs:us-east-1:123456789012:log-group:{}:*",
            "AWS::IAM::Role": "arn:aws:iam::123456789012:role/{}",
            "AWS::SQS::Queue": "arn:aws:sqs:us-east-1:123456789012:{}",
            "AWS::Events::Rule": "arn:aws:events:us-east-1:123456789012:rule/{}",
        }
        return arns[kind].format(ref(name))

    resolver = Resolver(CONCRETE, ref, attr)
    return resolver


# -- IAM ---------------------------------------------------------------------------------


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def role_statements(template: dict[str, Any], role: str) -> list[dict[str, Any]]:
    """Every inline statement of a role of the transformed template, resolved concretely."""
    resolve = concrete(template)
    props = template["Resources"][role]["Properties"]
    return [
        statement
        for policy in props.get("Policies", [])
        for statement in _listed(resolve(policy["PolicyDocument"])["Statement"])
    ]


def _condition_holds(operator: str, key: str, patterns: list[str], context: dict[str, Any]) -> bool:
    if operator == "ForAllValues:StringLike":
        # IAM: true for a missing key; every value must match one pattern.
        return all(any(fnmatchcase(v, p) for p in patterns) for v in context.get(key, []))
    if operator in ("StringLike", "StringEquals"):
        if key not in context:
            return False
        match = fnmatchcase if operator == "StringLike" else str.__eq__
        return any(match(context[key], p) for p in patterns)
    raise AssertionError(f"the evaluator does not know {operator}")


def allowed(
    statements: list[dict[str, Any]],
    action: str,
    resource: str,
    context: dict[str, Any] | None = None,
) -> bool:
    """Whether an identity policy allows the request (no Deny statements are emitted)."""
    context = context or {}
    for statement in statements:
        assert statement["Effect"] == "Allow", statement
        if not any(fnmatchcase(action, a) for a in _listed(statement["Action"])):
            continue
        if not any(fnmatchcase(resource, r) for r in _listed(statement["Resource"])):
            continue
        conditions = statement.get("Condition", {})
        if all(
            _condition_holds(op, key, _listed(patterns), context)
            for op, keys in conditions.items()
            for key, patterns in keys.items()
        ):
            return True
    return False


def function_statements(resources: dict[str, Any], function_id: str) -> list[dict[str, Any]]:
    """The inline statements of a function's own role, in the generated template (each SAM
    function names its `Role`, declared next to it: infra.sam.roles)."""
    role_id = resources[function_id]["Properties"]["Role"]["Fn::GetAtt"][0]
    policies = resources[role_id]["Properties"].get("Policies", [])
    return [s for policy in policies for s in policy["PolicyDocument"]["Statement"]]
