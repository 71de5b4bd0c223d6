"""Workflow specs: every reference of a template or condition is checked at validation and
reported at its line (the line ending in `#!`), and a good workflow validates."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from infra.checks.validate import validate_file
from tests.infra.checks.test_validate_bad import _write_project

AGENTS = """\
version: 1
models:
  m: {provider: scripted, script: [{text: hi}]}
agents:
  classifier:
    description: d
    model: m
    output_schema: {type: object, properties: {category: {type: string}, tags: {type: array, items: {type: string}}}}
  plain: {description: d, model: m}
"""


def w(body: str) -> str:
    return AGENTS + textwrap.dedent(body).lstrip("\n")


CASES: dict[str, tuple[str, str]] = {
    "an llm step's unknown model": (
        w("""
        workflows:
          f:
            steps:
              - id: a
                llm: {model: mm, prompt: "{input}"}  #!
        """),
        "unknown model 'mm'",
    ),
    "a property an llm step's output_schema lacks": (
        w("""
        workflows:
          f:
            steps:
              - {id: a, llm: {model: m, prompt: "{input}", output_schema: {type: object, properties: {tags: {type: array}}}}}
              - {id: b, agent: plain, input: "{a.tgs}"}  #!
        """),
        "the output_schema of step 'a' has no property 'tgs'; did you mean 'tags'?",
    ),
    "a property of an llm step's text answer": (
        w("""
        workflows:
          f:
            steps:
              - {id: a, llm: {model: m, prompt: "{input}"}}
              - {id: b, agent: plain, input: "{a.tags}"}  #!
        """),
        "llm step without output_schema, so its result is text",
    ),
    "an llm step's invalid output_schema": (
        w("""
        workflows:
          f:
            steps:
              - {id: a, llm: {model: m, prompt: "{input}", output_schema: {type: objekt}}}  #!
        """),
        "not a valid JSON Schema",
    ),
    "unknown agent": (
        w("""
        workflows:
          f:
            steps:
              - {id: a, agent: clasifier}  #!
        """),
        "unknown agent 'clasifier'; did you mean 'classifier'?",
    ),
    "a later step": (
        w("""
        workflows:
          f:
            steps:
              - {id: a, agent: plain, input: "{b}"}  #!
              - {id: b, agent: plain}
        """),
        "{b} names no input property or earlier step",
    ),
    "a property the schema lacks": (
        w("""
        workflows:
          f:
            steps:
              - {id: a, agent: classifier}
              - {id: b, agent: plain, input: "{a.categroy}"}  #!
        """),
        "has no property 'categroy'; did you mean 'category'?",
    ),
    "a property of a text result": (
        w("""
        workflows:
          f:
            steps:
              - {id: a, agent: plain}
              - {id: b, agent: plain, when: "{a.ok}"}  #!
        """),
        "has no output_schema, so its result is text",
    ),
    "map over a text": (
        w("""
        workflows:
          f:
            steps:
              - {id: a, agent: classifier}
              - id: b
                map: {over: "tags", agent: plain}  #!
        """),
        "`over` is one reference to a list",
    ),
    "a condition that does not parse": (
        w("""
        workflows:
          f:
            steps:
              - {id: a, agent: classifier}
              - {id: b, agent: plain, when: "{a.category} = 'x'"}  #!
        """),
        "cannot read the condition",
    ),
    "code in a condition": (
        w("""
        workflows:
          f:
            steps:
              - {id: a, agent: plain, when: "__import__('os').system('id')"}  #!
        """),
        'cannot read the condition at ".system',
    ),
    "a condition without a reference": (
        w("""
        workflows:
          f:
            steps:
              - {id: a, agent: plain, when: "'x' == 'x'"}  #!
        """),
        "a condition starts with a reference",
    ),
    "item outside a map": (
        w("""
        workflows:
          f:
            steps:
              - {id: a, agent: plain, input: "{item}"}  #!
        """),
        "only defined in a map step's input",
    ),
    "two kinds in one step": (
        w("""
        workflows:
          f:
            steps:
              - id: a  #!
                agent: plain
                loop: {agent: plain, until: "{a}"}
        """),
        "a step has exactly one of",
    ),
    "a branch index past the end": (
        w("""
        workflows:
          f:
            steps:
              - id: a
                parallel: [{agent: classifier}, {agent: plain}]
              - {id: b, agent: plain, input: "{a.2}"}  #!
        """),
        "step 'a' has 2 branches",
    ),
    "an input property that does not exist": (
        w("""
        workflows:
          f:
            input_schema: {type: object, properties: {ticket: {type: string}}}
            steps:
              - {id: a, agent: plain, input: "{tiket}"}  #!
        """),
        "did you mean 'ticket'?",
    ),
    "a step's max_turns over its agent's own": (
        w("""
        workflows:
          f:
            steps:
              - {id: a, agent: plain, max_turns: 26}  #!
        """),
        "26 is over the max_turns of agent 'plain' (25), the ceiling",
    ),
    "a workflow named like an agent": (
        w("""
        workflows:
          plain:  #!
            steps:
              - {id: a, agent: classifier}
        """),
        "is also an agent's name",
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_a_bad_workflow_is_reported_at_its_line(case: str, tmp_path: Path) -> None:
    text, message = CASES[case]
    spec, line = _write_project(tmp_path, text)
    result = validate_file(spec)
    assert not result.ok
    matching = [issue for issue in result.issues if message in issue.message]
    assert matching, [str(i) for i in result.issues]
    assert matching[0].line == line, [str(i) for i in result.issues]


def test_a_good_workflow_validates(tmp_path: Path) -> None:
    spec, _ = _write_project(
        tmp_path,
        w("""
        workflows:
          f:  #!
            input_schema: {type: object, properties: {ticket: {type: string}}}
            steps:
              - {id: a, agent: classifier, input: "{ticket}"}
              - id: b
                parallel:
                  - {agent: plain, when: "{a.category} == 'billing' and {a.tags.0} == null"}
                  - {agent: classifier, input: "{input}"}
              - {id: c, map: {over: "{a.tags}", agent: plain, input: "tag {item}"}}
              - {id: d, agent: plain, input: "{b.1.category} {b.0} {c}"}
              - {id: e, loop: {agent: classifier, input: "{e.category}", until: "{e.category} != ''"}}
        """),
    )
    result = validate_file(spec)
    assert result.ok, [str(i) for i in result.issues]
    assert result.spec is not None and list(result.spec.workflows) == ["f"]


def test_a_workflow_that_could_outgrow_one_execution_is_refused(tmp_path: Path) -> None:
    spec, line = _write_project(
        tmp_path,
        w("""
        workflows:
          f:
            steps:  #!
              - {id: a, agent: classifier}
              - id: b
                map: {over: "{a.tags}", agent: plain, max_items: 1000}
                retries: 3
        """),
    )
    result = validate_file(spec)
    assert not result.ok
    (issue,) = [i for i in result.issues if "history events" in i.message]
    assert "lower a map's max_items" in issue.message and issue.line == line
