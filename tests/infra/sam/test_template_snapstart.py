"""`deployment.snapstart`: the functions a caller waits on are published with SnapStart behind
the alias `live`, and every invoker the stack has names that alias, never `$LATEST` (which has
no snapshot). Checked on the template CloudFormation would deploy (the real SAM transform)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.sam import limits
from infra.sam.naming import agent_function_id, workflow_function_id
from infra.sam.template import build_template, render
from runtime.spec import AgentfnSpec
from tests.helpers import FULL_SPEC
from tests.infra.cfn import concrete, role_statements, sam_transform
from tests.infra.stack_specs import agents_spec, template_of

NOT_WAITED_ON = {"SweeperFunction", "SandboxFunction"}  # a schedule; a fresh process per call


@pytest.fixture(scope="module")
def template(full_spec: AgentfnSpec) -> dict[str, Any]:
    assert full_spec.deployment.snapstart  # the full fixture turns it on
    return build_template(full_spec)


@pytest.fixture(scope="module")
def deployed(template: dict[str, Any]) -> dict[str, Any]:
    return sam_transform(template)


def _functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        k: v["Properties"]
        for k, v in template["Resources"].items()
        if v["Type"] == "AWS::Serverless::Function"
    }


def _snapped(template: dict[str, Any]) -> set[str]:
    return {k for k, p in _functions(template).items() if "SnapStart" in p}


def test_off_by_default_and_nothing_is_published(demo_spec: AgentfnSpec) -> None:
    assert demo_spec.deployment.snapstart is False
    template = build_template(demo_spec)
    for props in _functions(template).values():
        assert "SnapStart" not in props and "AutoPublishAlias" not in props
    assert (
        "AGENTFN_FUNCTION_ALIAS" not in template["Globals"]["Function"]["Environment"]["Variables"]
    )
    assert "Alias" not in json.dumps(template)


def test_every_function_a_caller_waits_on_is_published_with_snapstart(
    template: dict[str, Any], full_spec: AgentfnSpec
) -> None:
    functions = _functions(template)
    expected = {agent_function_id(a) for a in full_spec.agents}
    expected |= {workflow_function_id(w) for w in full_spec.workflows}
    expected |= {"ApiFunction", "LiveFunction"}
    assert _snapped(template) == expected
    assert set(functions) - expected == NOT_WAITED_ON & set(functions)
    for name in expected:
        assert functions[name]["SnapStart"] == {"ApplyOn": "PublishedVersions"}
        assert functions[name]["AutoPublishAlias"] == "live"
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["AGENTFN_FUNCTION_ALIAS"] == "live"


def test_every_invoker_names_the_alias_never_latest(deployed: dict[str, Any]) -> None:
    """No reference to a published function's unqualified ARN anywhere CloudFormation would
    deploy (state machine substitutions, IAM grants, permissions, API integrations); each
    state machine, permission and integration names an alias."""
    resources = deployed["Resources"]
    aliases = {k: v for k, v in resources.items() if v["Type"] == "AWS::Lambda::Alias"}
    published = {a["Properties"]["FunctionName"]["Ref"] for a in aliases.values()}
    assert published and published.isdisjoint(NOT_WAITED_ON)
    text = json.dumps(deployed)
    for function in published:
        assert json.dumps({"Fn::GetAtt": [function, "Arn"]}) not in text, function
        assert "${" + function + ".Arn}" not in text, function
    for logical_id, resource in resources.items():
        props = resource["Properties"]
        if resource["Type"] == "AWS::StepFunctions::StateMachine":
            for value in props["DefinitionSubstitutions"].values():
                assert value["Ref"] in aliases, (logical_id, value)
        if resource["Type"] == "AWS::Lambda::Permission":
            target = props["FunctionName"]["Ref"]
            assert target in aliases or target in NOT_WAITED_ON, logical_id
    body = json.dumps(resources["Api"]["Properties"]["Body"])
    assert "ApiFunctionAliaslive" in body and "ApiFunction.Arn" not in body
    live = resources["LiveIntegration"]["Properties"]["IntegrationUri"]["Fn::Sub"]
    assert "${LiveFunctionAliaslive}" in live


def test_state_machines_may_invoke_the_aliases_only(deployed: dict[str, Any]) -> None:
    """The roles grant qualified ARNs: `function:NAME:live`, not the bare `function:NAME`
    (IAM matches a qualified invocation only against a qualified grant)."""
    resolve = concrete(deployed)
    resources = deployed["Resources"]
    for logical_id, resource in resources.items():
        if resource["Type"] != "AWS::StepFunctions::StateMachine":
            continue
        role = resource["Properties"]["RoleArn"]["Fn::GetAtt"][0]
        grants = [
            s
            for s in role_statements(deployed, role)
            if "lambda:InvokeFunction" in json.dumps(s["Action"])
        ]
        targets = [r for s in grants for r in (s["Resource"] if isinstance(s["Resource"], list)
                   else [s["Resource"]])]  # fmt: skip
        assert targets, logical_id
        for target in targets:
            assert target.endswith(":live"), (logical_id, target)
        (substitution,) = resource["Properties"]["DefinitionSubstitutions"].values()
        assert resolve(substitution) in targets


def test_a_runtime_without_snapstart_is_refused_naming_the_key(tmp_path: Path) -> None:
    data = yaml.safe_load(FULL_SPEC.read_text(encoding="utf-8"))
    data["deployment"]["runtime"] = "python3.11"
    path = tmp_path / "agents.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    from infra.checks.validate import validate_file

    result = validate_file(path)
    assert not result.ok
    (issue,) = [str(i) for i in result.issues if "snapstart" in str(i)]
    assert ": deployment.snapstart: " in issue and "needs runtime python3.12 or later" in issue


def test_counted_as_the_transform_makes_it_and_what_it_costs_the_largest_stack(
    template: dict[str, Any], deployed: dict[str, Any], tmp_path: Path
) -> None:
    """Each published function adds a version and an alias: the counter agrees with the real
    transform, and the largest stack of demo-like agents shrinks (README: Stack size limits)."""
    real = Counter(r["Type"] for r in deployed["Resources"].values())
    assert limits.expand(template) == real
    counted = limits.figures(template, render(template))
    size_of_processed = len(json.dumps(deployed, separators=(",", ":")).encode())
    assert size_of_processed <= counted.processed_bytes <= 1.2 * size_of_processed
    assert real["AWS::Lambda::Version"] == real["AWS::Lambda::Alias"] == len(_snapped(template))

    def counted(agents: int, snapstart: bool) -> Counter[str]:
        data = agents_spec(agents)
        data["deployment"] = {"snapstart": snapstart}
        folder = tmp_path / f"{agents}-{snapstart}"
        folder.mkdir(exist_ok=True)
        (folder / "agents.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
        return limits.expand(template_of(folder / "agents.yaml"))

    def largest(snapstart: bool) -> int:
        low, high = 1, 200
        while high - low > 1:
            middle = (low + high) // 2
            fits = counted(middle, snapstart).total() <= limits.RESOURCES
            low, high = (middle, high) if fits else (low, middle)
        return low

    off, on = largest(False), largest(True)
    assert on < off
    made = counted(on, True)  # a version and an alias for each agent, the API and live runs
    assert made["AWS::Lambda::Version"] == made["AWS::Lambda::Alias"] == on + 2
    assert counted(on + 1, True).total() > limits.RESOURCES
    print(f"largest stack: {off} agents without SnapStart, {on} with it")


def test_the_api_and_a_handoff_reach_the_alias_by_name(
    deployed: dict[str, Any], full_spec: AgentfnSpec
) -> None:
    """The API's inline advance and a handoff name `NAME:live` (runtime.stack, from the
    functions' environment); the API's role may invoke it (its grant is a prefix)."""
    from infra.sam.naming import agent_function_id as function_id
    from runtime.stack import Stack
    from tests.infra.cfn import allowed

    resolve = concrete(deployed)
    resources = deployed["Resources"]
    variables = resolve(resources["ApiFunction"]["Properties"]["Environment"]["Variables"])
    stack = Stack(
        function_prefix=variables["AGENTFN_FUNCTION_PREFIX"],
        function_alias=variables["AGENTFN_FUNCTION_ALIAS"],
    )
    api = role_statements(deployed, "ApiFunctionRole")
    for agent in full_spec.agents:
        qualified = stack.function(agent)
        assert qualified is not None and qualified.endswith(":live")
        arn = resolve({"Fn::GetAtt": [function_id(agent), "Arn"]}) + ":live"
        assert arn.endswith(qualified)
        assert allowed(api, "lambda:InvokeFunction", arn), agent


def test_the_snapshot_module_ships_only_with_snapstart(
    demo_spec: AgentfnSpec, full_spec: AgentfnSpec, tmp_path: Path
) -> None:
    """handlers/snapshot.py runs only at a SnapStart init: without SnapStart it stays out of
    the code zip (whose budget is 1 MB)."""
    from infra.sam.package import stage_package
    from tests.helpers import DEMO_SPEC

    off = stage_package(demo_spec, DEMO_SPEC.parent, tmp_path / "off")
    on = stage_package(full_spec, FULL_SPEC.parent, tmp_path / "on")
    assert not (off / "handlers" / "snapshot.py").exists()
    assert (off / "handlers" / "step.py").exists()
    assert (on / "handlers" / "snapshot.py").exists()
