"""`agentfn eval` as a user runs it, on scripted agents: the exit code, the table and the
JUnit XML name exactly the failing assertions; a judge's grade reaches the report; an
eval file's mistakes are located; the demo's own eval file passes."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from xml.etree import ElementTree as ET

from tests.helpers import ROOT, run_agentfn

SPEC = """\
version: 1
defaults: {model: clerk-model}
models:
  clerk-model:
    provider: scripted
    script:
      - tool_calls: [{name: lookup_order, arguments: {order_id: ORD-1001}}]
        usage: {input_tokens: 100, output_tokens: 10}
      - text: {order_id: ORD-1001, status: delivered}
        usage: {input_tokens: 200, output_tokens: 20}
tools:
  lookup_order:
    type: python
    handler: tools.orders:lookup_order
    description: Look an order up.
    effect: read_only
agents:
  clerk:
    description: Looks orders up.
    system_prompt: You look orders up.
    tools: [lookup_order]
    output_schema:
      type: object
      properties: {order_id: {type: string}, status: {type: string}}
      required: [order_id, status]
  hasty:
    description: Has one turn only.
    system_prompt: You look orders up.
    tools: [lookup_order]
    max_turns: 1
"""

EVALS = """\
version: 1
models:
  strict-judge:
    provider: scripted
    script:
      - text: {grade: 0.4, reasoning: "It never says when the parcel arrived."}
  kind-judge:
    provider: scripted
    script:
      - text: '{"grade": 0.95, "reasoning": "States the status plainly."}'
cases:
  - name: looks_up_the_order
    agent: clerk
    input: Where is ORD-1001?
    expect:
      status: succeeded
      max_turns: 2
      max_tokens: 330
      tools:
        order: in_order
        calls: [{tool: lookup_order, args: {order_id: {regex: "^ORD-10"}}, success: true}]
      result: {subset: {status: delivered}, schema: {type: object, required: [status]}}
      answer: {contains: delivered, not_contains: cancelled}
      judge: {rubric: States the order's status., model: kind-judge, threshold: 0.9}
  - name: wrong_order_and_words
    agent: clerk
    input: Where is ORD-1001?
    expect:
      status: succeeded
      tools:
        calls: [{tool: lookup_order, args: {order_id: ORD-2002}}]
      answer: {contains: shipped}
      max_tokens: 100
  - name: hasty_runs_out_of_turns
    agent: hasty
    input: Where is ORD-1001?
    expect: {status: failed, error_code: MAX_TURNS_EXCEEDED, max_turns: 1}
  - name: judged_too_vague
    agent: clerk
    input: Where is ORD-1001?
    expect:
      judge: {rubric: Says when the parcel arrived., model: strict-judge}
"""


def _project(tmp_path: Path, evals: str = EVALS) -> Path:
    (tmp_path / "agents.yaml").write_text(SPEC, encoding="utf-8")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "__init__.py").write_text("", encoding="utf-8")
    (tools / "orders.py").write_text(
        "def lookup_order(order_id: str) -> dict:\n"
        "    return {'order_id': order_id, 'status': 'delivered'}\n",
        encoding="utf-8",
    )
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "orders.yaml").write_text(evals, encoding="utf-8")
    return tmp_path


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "AGENTFN_STATE_DIR": str(tmp_path / "state")}


def test_failing_cases_exit_1_and_the_table_and_junit_name_exactly_the_failed_assertions(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    junit, report = tmp_path / "out" / "junit.xml", tmp_path / "out" / "report.md"
    result = run_agentfn(
        "eval", "--junit", str(junit), "--report", str(report), cwd=project, env=_env(tmp_path)
    )
    assert result.returncode == 1, result.stderr + result.stdout
    table = result.stdout
    rows = {line.split()[0]: line for line in table.splitlines() if "::" in line}
    assert "PASS" in rows["orders.yaml::looks_up_the_order"]
    assert "FAIL" in rows["orders.yaml::wrong_order_and_words"]
    assert "FAIL" in rows["orders.yaml::judged_too_vague"]
    assert "expect.tools.calls[0].args.order_id: 'ORD-1001' does not equal 'ORD-2002'" in table
    assert "expect.answer.contains: 'shipped' not in the answer" in table
    assert "expect.max_tokens: 330 > 100" in table
    assert "expect.judge: grade 0.4 < threshold 0.7" in table
    assert "PASS" in rows["orders.yaml::hasty_runs_out_of_turns"]
    assert "2 passed, 2 failed" in table

    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "4" and suite.get("failures") == "2"
    failures = {case.get("name"): case.find("failure") for case in suite.iter("testcase")}
    assert failures["looks_up_the_order"] is None
    wrong = failures["wrong_order_and_words"]
    assert wrong is not None
    assert wrong.get("message") == (
        "expect.max_tokens; expect.tools.calls[0].args.order_id; expect.answer.contains"
    )
    vague = failures["judged_too_vague"]
    assert vague is not None and vague.get("message") == "expect.judge"

    text = report.read_text(encoding="utf-8")
    assert "Judge kind-judge: grade 0.95 (threshold 0.9). Reasoning: States the status" in text
    assert "Judge strict-judge: grade 0.4 (threshold 0.7). Reasoning: It never says" in text
    assert '1. ✓ clerk → lookup_order {"order_id": "ORD-1001"}' in text
    assert '-"ORD-2002"' not in text or "expected vs actual" in text
    assert "| expect.tools.calls[0].args.order_id | FAIL |" in text


def test_only_passing_cases_exit_0_and_an_html_report_is_self_contained(tmp_path: Path) -> None:
    project = _project(tmp_path)
    report = tmp_path / "report.html"
    result = run_agentfn(
        "eval",
        "-k",
        "looks_up",
        "--agent",
        "clerk",
        "--report",
        str(report),
        cwd=project,
        env=_env(tmp_path),
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert "1 passed, 0 failed" in result.stdout
    assert "wrong_order" not in result.stdout
    page = report.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "<style>" in page
    assert "src=" not in page and "href=" not in page  # nothing fetched from elsewhere
    assert "grade 0.95" in page


def test_mistakes_in_an_eval_file_are_located_at_file_line_column(tmp_path: Path) -> None:
    bad = textwrap.dedent(
        """\
        version: 1
        cases:
          - name: one
            agent: clerk
            input: hi
            expect:
              status: done
              tools:
                calls: [{tool: lookup_order, args: {order_id: {like: ORD}}}]
          - name: two
            agent: clark
            input: hi
            expect: {answer: {matches: "(unclosed"}, judge: {rubric: fine}}
        """
    )
    project = _project(tmp_path, bad)
    result = run_agentfn("eval", cwd=project, env=_env(tmp_path))
    assert result.returncode == 2, result.stderr
    errors = result.stderr
    assert "evals/orders.yaml:7:15: cases[0].expect.status: expected " in errors
    assert "evals/orders.yaml:9:55: cases[0].expect.tools.calls[0].args.order_id: " in errors
    assert "exactly one of equals, contains, regex, subset; got 'like'" in errors
    assert errors.count("args.order_id") == 1  # one problem, one line
    assert "evals/orders.yaml:13:32: cases[1].expect.answer.matches: " in errors
    assert "invalid regular expression '(unclosed'" in errors


def test_unknown_names_are_located_once_the_eval_file_parses(tmp_path: Path) -> None:
    bad = "version: 1\ncases:\n  - {name: two, agent: clark, input: hi, expect: {judge: {rubric: r}}}\n"
    project = _project(tmp_path, bad)
    result = run_agentfn("eval", cwd=project, env=_env(tmp_path))
    assert result.returncode == 2, result.stderr
    assert "evals/orders.yaml:3:24: cases[0].agent: unknown agent 'clark'" in result.stderr
    assert "did you mean 'clerk'" in result.stderr
    assert "no judge model: set `model:` here or `judge:`" in result.stderr


def test_the_demo_ships_an_eval_file_that_passes() -> None:
    """evals/support.yaml: the refund with its approval, trajectory and judged rubric."""
    result = run_agentfn("eval", cwd=ROOT)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "support.yaml::refund_after_approval" in result.stdout
    assert "5 passed, 0 failed" in result.stdout
