"""Every state machine definition `agentfn build` generates is valid for Step Functions, by two
checks that are stricter than cfn-lint, `sam validate --lint` and moto (which all accepted
the workflows' duplicate state names):

- asl-validator, the independent Amazon States Language validator (npm, pinned in tests/asl,
  installed into .tools/asl-validator by `python3 scripts/dev.py test`, which passes its CLI
  in AGENTFN_ASL_VALIDATOR), run on every definition after CloudFormation's
  DefinitionSubstitutions are replaced with realistic ARNs;
- infra/sam/asl_check.py, the graph rules it does not cover (every target in its scope,
  every state reachable, a terminal state reachable from every state, names ≤ 80).

Over: the demo, the full fixture, the workflow tests' spec, a stress spec with every workflow
construct at the spec's limits (50 steps, 20 parallel branches, maps, loops, conditions,
retries, approvals inside steps, 64-character step ids), every `deployment` variant, and a
spec large enough that the definitions go to files (`DefinitionUri`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.checks.validate import validate_text
from infra.sam import asl_check
from infra.sam.naming import agent_state_machine_id, workflow_state_machine_id
from infra.sam.template import build_template, definition_files
from infra.sam.workflow_asl import state_name
from runtime.spec import AgentfnSpec
from tests.e2e.workflow_specs import workflow_spec
from tests.helpers import DEMO_SPEC, ROOT

INSTALLED = ROOT / ".tools/asl-validator/node_modules/asl-validator/dist/bin/asl-validator.js"
ACCOUNT, REGION, STACK = "123456789012", "us-east-1", "agentfn-demo"


def _validator() -> tuple[str, str]:
    """The node and asl-validator's CLI, or a skip when it was never installed (pytest run by
    hand; `scripts/dev.py test` always installs it and says where: then it must be there)."""
    entry = os.environ.get("AGENTFN_ASL_VALIDATOR")
    if entry is not None:
        assert Path(entry).is_file(), f"AGENTFN_ASL_VALIDATOR points to a missing file: {entry}"
        node = os.environ.get("AGENTFN_NODE") or shutil.which("node")
        assert node, "AGENTFN_ASL_VALIDATOR is set but there is no node to run it"
        return node, entry
    node = shutil.which("node")
    if not INSTALLED.is_file() or node is None:
        pytest.skip("asl-validator is installed by `python3 scripts/dev.py test`")
    return node, str(INSTALLED)


def asl_validator(definitions: dict[str, dict[str, Any]], where: Path) -> dict[str, str]:
    """label → "" when asl-validator finds the definition valid, else its error text; one
    node process for all of them."""
    node, entry = _validator()
    paths: dict[str, Path] = {}
    for i, (label, definition) in enumerate(definitions.items()):
        paths[label] = where / f"{i:03d}.asl.json"
        paths[label].write_text(json.dumps(definition), encoding="utf-8")
    args = [node, entry, *(arg for p in paths.values() for arg in ("--json-path", str(p)))]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 2: the validator crashed
    out = done.stdout + done.stderr
    verdicts: dict[str, str] = {}
    for label, path in paths.items():
        if f'✓ State machine definition "{path}" is valid' in out:
            verdicts[label] = ""
        else:
            found = re.search(rf'✕ State machine definition "{re.escape(str(path))}" is invalid:'
                              r"\n(.*?)(?=\n[✓✕]|\Z)", out, re.S)  # fmt: skip
            assert found, f"asl-validator said nothing of {label}:\n{out}"
            verdicts[label] = found.group(1).strip()
    assert (done.returncode == 0) == all(v == "" for v in verdicts.values()), out
    return verdicts


#: What a deployed stack's `Fn::Sub` variables become (Stack8: 8 characters of its stack id).
SUB_VALUES = {"AWS::StackName": STACK, "AWS::Region": REGION, "AWS::AccountId": ACCOUNT}
SUB_VALUES["Stack8"] = "4f2a9c1e"


def _physical(resource: dict[str, Any], logical_id: str) -> str:
    """The function's name as CloudFormation would resolve its `FunctionName`."""
    name = resource["Properties"].get("FunctionName", logical_id)
    if isinstance(name, dict):
        body = name["Fn::Sub"]
        name = body[0] if isinstance(body, list) else body
        for variable in re.findall(r"\$\{([^}]+)\}", name):
            name = name.replace("${" + variable + "}", SUB_VALUES[variable])
    return str(name)


def machines(spec: AgentfnSpec, template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """logical id → the definition Step Functions would get: inline or from its staged file,
    every `${…}` of DefinitionSubstitutions replaced by the ARN CloudFormation would put."""
    resources, files = template["Resources"], definition_files(spec)
    found: dict[str, dict[str, Any]] = {}
    for logical_id, resource in resources.items():
        if resource["Type"] != "AWS::Serverless::StateMachine":
            continue
        props = resource["Properties"]
        definition = props["Definition"] if "Definition" in props else files[props["DefinitionUri"]]
        text = json.dumps(definition)
        for key, value in props.get("DefinitionSubstitutions", {}).items():
            # The only kinds generated (a new one fails): the function's ARN, or with
            # SnapStart its alias's (SAM's `Ref: {Function}.Alias`).
            if "Ref" in value:
                target, qualifier = value["Ref"].split(".")
                assert qualifier == "Alias", value
                alias = ":" + resources[target]["Properties"]["AutoPublishAlias"]
            else:
                (target, attribute), alias = value["Fn::GetAtt"], ""
                assert attribute == "Arn", value
            assert resources[target]["Type"] == "AWS::Serverless::Function"
            name = _physical(resources[target], target)
            arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}{alias}"
            text = text.replace("${" + key + "}", arn)
        assert "${" not in text, f"{logical_id}: a ${{…}} without a substitution"
        found[logical_id] = json.loads(text)
    expected = {agent_state_machine_id(a) for a in spec.agents}
    expected |= {workflow_state_machine_id(w) for w in spec.workflows}
    assert set(found) == expected
    return found


def _demo_data() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(DEMO_SPEC.read_text(encoding="utf-8"))
    return data


def _spec(data: dict[str, Any]) -> AgentfnSpec:
    """Validated exactly as `agentfn build` validates a file (references of workflows too)."""
    result = validate_text(yaml.safe_dump(data, sort_keys=False), "agents.yaml", ROOT)
    assert result.ok and result.spec is not None, "\n".join(str(i) for i in result.issues)
    return result.spec


def _long_id(kind: str, i: int) -> str:
    """A step id of the most characters a name may have (64): the longest state names."""
    head = f"{kind}{i}_"
    return head + "x" * (64 - len(head))


def stress_data() -> dict[str, Any]:
    """The demo plus workflows with every construct, as large and nested as the spec allows:
    50 steps (the most), agent steps whose agent waits for approval (billing), 20-branch
    parallel steps with conditions, map steps at concurrency 40 over an input list, loops with
    `until` on their own result, retries and `on_error: continue`, 64-character ids."""
    data = _demo_data()
    steps: list[dict[str, Any]] = []
    for i in range(10):  # 5 steps each: 50

        def name(kind: str, i: int = i) -> str:
            return _long_id(kind, i) if i % 2 else f"{kind}{i}"

        loop_id = name("loop")
        steps += [
            {
                "id": name("refund"),
                "agent": "billing",  # every refund waits for a person's approval
                "input": "Refund {order_id}",
                "when": "{order_id} != 'ORD-0'",
                "retries": 2,
                "on_error": "continue",
            },
            {
                "id": name("fan"),
                "parallel": [
                    {
                        "agent": ("orders", "researcher", "billing")[b % 3],
                        "input": "{order_id}",
                        **({"when": "{order_id} == 'ORD-1001'"} if b % 2 else {}),
                    }
                    for b in range(20)
                ],
            },
            {
                "id": name("map"),
                "map": {
                    "over": "{items}",
                    "agent": "billing",
                    "input": "Refund {item}",
                    "max_concurrency": 40,
                    "max_items": 5,
                },
                "retries": 1,
            },
            {
                "id": loop_id,
                "loop": {
                    "agent": "researcher",
                    "input": "Is {order_id} refundable?",
                    "until": f"{{{loop_id}.within_window}} == true",
                    "max_iterations": 5,
                },
                "on_error": "continue",
            },
            {
                "id": name("after"),
                "agent": "orders",
                "input": "{order_id}",
                "when": f"{{{loop_id}.within_window}} == false",
            },
        ]
    schema = {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "items": {"type": "array"}},
        "required": ["order_id", "items"],
    }
    data["workflows"]["stress"] = {"input_schema": schema, "steps": steps}
    data["workflows"]["single"] = {
        "input_schema": schema,
        "steps": [{"id": "only", "map": {"over": "{items}", "agent": "billing"}}],
    }
    return data


#: Every `deployment` setting that shapes the template (docs/spec.md, `deployment`).
DEPLOYMENTS: dict[str, dict[str, Any]] = {
    "default": {},
    "no-tracing": {"tracing": False},
    "no-access-logs": {"access_logs": False},
    "open-api": {"api_auth": "none", "stage_name": "prod"},
    "no-monitoring": {"monitoring": {"dashboard": False, "alarms": False}},
    "telemetry": {"telemetry": {"otlp_endpoint": "https://otel.example.com", "xray": True}},
    "x86-311-debug": {"architecture": "x86_64", "runtime": "python3.11", "log_level": "DEBUG"},
    "short-retention": {"retention": "2d", "log_retention_days": 1, "sweep_interval": "1m"},
    "event-bus": {"event_bus": "orders-bus", "api_throttle": {"rate_limit": 1, "burst_limit": 1}},
}


def _large_data(agents: int = 40) -> dict[str, Any]:
    return {
        "version": 1,
        "models": {"m": {"provider": "scripted", "script": [{"text": "ok"}]}},
        "agents": {
            f"agent{i}": {"description": "One of many.", "model": "m"} for i in range(agents)
        },
    }


def _check_all(cases: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """Both checks over every definition; a failure lists every broken one."""
    structural = {label: asl_check.problems(d, label) for label, d in cases.items()}
    assert {k: v for k, v in structural.items() if v} == {}
    distinct = {json.dumps(d, sort_keys=True): label for label, d in cases.items()}
    verdicts = asl_validator({label: cases[label] for label in distinct.values()}, tmp_path)
    assert {k: v for k, v in verdicts.items() if v} == {}
    assert len(verdicts) == len(distinct) > 0


def test_every_definition_of_the_demo_the_fixture_and_the_workflow_specs_is_valid(
    demo_spec: AgentfnSpec, full_spec: AgentfnSpec, tmp_path: Path
) -> None:
    cases: dict[str, dict[str, Any]] = {}
    specs = {"demo": demo_spec, "full": full_spec, "workflows": workflow_spec()}
    for name, spec in specs.items():
        for logical_id, definition in machines(spec, build_template(spec)).items():
            cases[f"{name}:{logical_id}"] = definition
    assert len(cases) == sum(len(s.agents) + len(s.workflows) for s in specs.values()) > 20
    _check_all(cases, tmp_path)


def test_every_definition_of_a_stress_spec_at_the_limits_is_valid(tmp_path: Path) -> None:
    spec = _spec(stress_data())
    assert len(spec.workflows["stress"].steps) == 50
    found = machines(spec, build_template(spec))
    stress = found[workflow_state_machine_id("stress")]
    names = asl_check.state_names(stress)
    assert len(names) == len(set(names)) == 50 * 9 + 4
    assert max(len(n) for n in names) == len(state_name(_long_id("refund", 1), "Finished")) == 73
    _check_all({f"stress:{k}": v for k, v in found.items()}, tmp_path)


def test_every_deployment_variant_and_definitions_in_files_are_valid(tmp_path: Path) -> None:
    """What `deployment` changes is the resources around the state machines, never their
    definitions (checked here, so an option that starts to change one is validated too); the
    one switch of how a definition deploys is its size: past the inline limit, to files."""
    cases: dict[str, dict[str, Any]] = {}
    default: dict[str, dict[str, Any]] | None = None
    for variant, settings in DEPLOYMENTS.items():
        data = _demo_data()
        data["deployment"] = {**data.get("deployment", {}), **settings}
        spec = _spec(data)
        found = machines(spec, build_template(spec))
        default = default or found
        assert found == default, f"deployment {variant} changes a definition"
        cases.update({f"{variant}:{k}": v for k, v in found.items()})
    large = _spec(_large_data())
    template = build_template(large)
    uris = [r["Properties"].get("DefinitionUri") for r in template["Resources"].values()]
    assert sum(1 for u in uris if u) == 40  # every definition in a file
    cases.update({f"large:{k}": v for k, v in machines(large, template).items()})
    _check_all(cases, tmp_path)


def test_the_demo_workflow_state_names_are_unique(demo_spec: AgentfnSpec) -> None:
    template = build_template(demo_spec)
    definition = template["Resources"][workflow_state_machine_id("damaged_order")]["Properties"][
        "Definition"
    ]
    names = asl_check.state_names(definition)
    assert sorted(n for n in set(names) if names.count(n) > 1) == []
    iterators = [s["Iterator"]["States"] for s in definition["States"].values() if "Iterator" in s]
    assert [sorted(i) for i in iterators] == [
        ["check-Done", "check-Finished", "check-Recheck", "check-Wait"],
        ["refund-Done", "refund-Finished", "refund-Recheck", "refund-Wait"],
    ]


def test_asl_validator_refuses_the_duplicate_names_the_workflows_used_to_have(
    demo_spec: AgentfnSpec, tmp_path: Path
) -> None:
    """The validator run is not a rubber stamp: the old shape (every Map iterator naming its
    states `Wait`, `Recheck`, `Finished`, `Done`) is refused, and so is a dangling `Next`."""
    definition = build_template(demo_spec)["Resources"][workflow_state_machine_id("damaged_order")][
        "Properties"
    ]["Definition"]
    old = json.loads(re.sub(r'"(check|refund)-(Wait|Recheck|Finished|Done)"', r'"\2"',
                            json.dumps(definition)))  # fmt: skip
    dangling = json.loads(json.dumps(definition))
    dangling["States"]["Finish"]["Next"] = "Nowhere"
    verdicts = asl_validator({"old": old, "dangling": dangling}, tmp_path)
    assert "DUPLICATE_STATE_NAMES" in verdicts["old"] and "Wait" in verdicts["old"]
    assert "Nowhere" in verdicts["dangling"]
    assert asl_check.problems(old) and asl_check.problems(dangling)
