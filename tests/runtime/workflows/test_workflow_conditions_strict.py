"""Workflow conditions compare JSON values, not Python's loose ones (issue 22, point 12):
`{n} == true` held for n = 1, `{z} == false` for z = 0 and a lone `{word}` for "nope", so a
step guarded by them ran. Here a workflow whose input makes those comparisons is planned
by the real workflow service: none of the guarded steps may run, the steps guarded by the
honest comparisons do. And a condition nested deeper than the parser allows is a
validation error at its line, not a RecursionError."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infra.checks.validate import validate_file
from runtime.service import RunService
from runtime.spec import AgentfnSpec
from runtime.stack import Stack
from runtime.workflows.records import StepState, WorkflowRun
from runtime.workflows.service import WorkflowService
from runtime.workflows.template import MAX_NESTING, TemplateError, holds, parse_condition
from tests.infra.checks.test_validate_bad import _write_project, h
from tests.runtime.engine.kit import new_engine
from tests.runtime.workflows.test_workflow_tasks import Tokens

GUARDS = {
    "one_is_true": ("{n} == true", False),
    "zero_is_false": ("{z} == false", False),
    "nope_is_truthy": ("{word}", False),
    "not_nope": ("not {word}", True),
    "flag_is_true": ("{flag} == true", True),
    "flag_alone": ("{flag}", True),
    "one_is_one": ("{n} == 1.0", True),
    "list_of_ones": ("{ones} == {flags}", False),
}
INPUT = {"n": 1, "z": 0, "word": "nope", "flag": True, "ones": [1, 0], "flags": [True, False]}


def _spec() -> AgentfnSpec:
    any_type: dict[str, Any] = {}
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "models": {"m": {"provider": "scripted", "script": [{"text": "ran"}]}},
            "agents": {"worker": {"description": "d", "model": "m"}},
            "workflows": {
                "guarded": {
                    "input_schema": {
                        "type": "object",
                        "properties": {key: any_type for key in INPUT},
                    },
                    "steps": [
                        {"id": step, "agent": "worker", "when": condition}
                        for step, (condition, _) in GUARDS.items()
                    ],
                }
            },
        }
    )


def test_guarded_steps_run_only_when_their_json_comparison_holds() -> None:
    stack = Stack(function_prefix="agentfn-x-", state_machine_prefix="arn:sm:agentfn-x-")
    workflows = WorkflowService(RunService(new_engine(_spec()), stack, sfn=Tokens()))
    run = WorkflowRun(
        workflow_run_id="f" * 32,
        workflow="guarded",
        input=INPUT,
        steps={step: StepState() for step in GUARDS},
        created_at=0,
        updated_at=0,
        expires_at=10**10,
        spec_hash="x",
    )
    workflows.store.save_workflow_run(run, None)
    ran = {
        step: workflows.task({"workflow_run_id": "f" * 32, "action": "plan", "step": step})["run"]
        for step in GUARDS
    }
    assert ran == {step: expected for step, (_, expected) in GUARDS.items()}


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("{v} == true", False),
        ("{v} != true", True),
        ("{o} == {p}", False),
        ("{o} == {q}", True),
        ("{s} == 'true'", True),
        ("{s}", False),  # the string "true" is not true
        ("{missing}", False),
        ("not {missing}", True),
    ],
)
def test_values_compare_as_json(condition: str, expected: bool) -> None:
    scope = {"v": 1, "o": {"a": [1]}, "p": {"a": [True]}, "q": {"a": [1.0]}, "s": "true"}
    assert holds(condition, scope) is expected


def test_nesting_has_a_limit_with_a_clear_error() -> None:
    assert holds("(" * MAX_NESTING + "{a}" + ")" * MAX_NESTING, {"a": True})
    with pytest.raises(TemplateError, match=f"more than {MAX_NESTING} deep"):
        parse_condition("(" * (MAX_NESTING + 1) + "{a}" + ")" * (MAX_NESTING + 1))


def test_a_deeply_nested_condition_is_a_validation_error_at_its_line(tmp_path: Path) -> None:
    deep = "(" * 5000 + "{input}" + ")" * 5000
    spec, line = _write_project(
        tmp_path,
        h(f"""
        agents:
          a: {{description: d, model: m}}
        workflows:
          f:
            steps:
              - {{id: s, agent: a, when: "{deep}"}}  #!
        """),
    )
    result = validate_file(spec)
    assert not result.ok
    (issue,) = [i for i in result.issues if "deep" in i.message]
    assert issue.line == line and issue.file == str(spec)


LONE = """\
version: 1
models:
  m: {provider: scripted, script: [{text: hi}]}
agents:
  judge:
    description: d
    model: m
    output_schema: {type: object, properties: {ok: {type: boolean}, score: {type: integer}}}
  plain: {description: d, model: m}
workflows:
  f:
    input_schema: {type: object, properties: {word: {type: string}, flag: {type: boolean}}}
    steps:
      - {id: a, agent: judge, when: "{flag} and not {input.word.x}"}
      - {id: b, agent: plain, when: "{a.ok} or ({a.score} > 1)"}
      - {id: c, loop: {agent: judge, until: "{c.ok}"}}
      - {id: d, agent: plain, when: "WHEN"}  #!
"""


@pytest.mark.parametrize(
    ("when", "kind"),
    [("{word}", "of type string"), ("not {a.score}", "of type integer"), ("{b}", "text")],
)
def test_a_lone_reference_to_a_value_that_is_never_true_is_refused(
    when: str, kind: str, tmp_path: Path
) -> None:
    spec, line = _write_project(tmp_path, LONE.replace("WHEN", when))
    result = validate_file(spec)
    (issue,) = result.issues
    assert issue.line == line and f"it is {kind}: compare it instead" in issue.message


def test_lone_references_to_booleans_or_unknown_values_are_valid(tmp_path: Path) -> None:
    spec, _ = _write_project(tmp_path, LONE.replace("WHEN", "{a.ok} and not {c.ok}"))
    result = validate_file(spec)
    assert result.ok, [str(issue) for issue in result.issues]
