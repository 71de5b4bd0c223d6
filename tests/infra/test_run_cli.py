"""`agentfn run` as a user runs it: progress, --json, replies, exit codes, on moto."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT, run_agentfn


def test_demo_agent_uses_tools_and_ends_with_a_structured_result() -> None:
    result = run_agentfn("run", "support", "My order ORD-1001 arrived damaged.")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["order_id"] == "ORD-1001" and answer["resolution"] == "refund_offered"
    progress = result.stderr
    assert "step 1 · demo-support · 412→38 tokens" in progress
    assert "✓ lookup_order ·" in progress and " ms" in progress
    assert "✓ succeeded in 3 turns · 1543 in / 125 out tokens" in progress


def test_json_prints_only_the_result_contract() -> None:
    result = run_agentfn("run", "support", "damaged order", "--json")
    assert result.returncode == 0, result.stderr
    contract = json.loads(result.stdout)  # nothing but the JSON on stdout
    assert contract["status"] == "succeeded" and contract["agent"] == "support"
    for key in (
        "run_id",
        "session_id",
        "result",
        "reasoning",
        "tool_calls",
        "turns_used",
        "model_used",
        "tokens_input",
        "tokens_output",
    ):
        assert key in contract
    assert [c["tool_name"] for c in contract["tool_calls"]] == ["lookup_order", "get_time_date"]
    assert result.stderr == ""


def test_a_question_without_a_reply_exits_3_and_says_how_to_continue() -> None:
    result = run_agentfn("run", "triage", "where is my order?")
    assert result.returncode == 3
    assert "Which order is this about?" in result.stderr and "--reply" in result.stderr


def test_reply_answers_the_question_non_interactively() -> None:
    result = run_agentfn("run", "triage", "where is my order?", "--reply", "ORD-1002", "--json")
    assert result.returncode == 0, result.stderr
    contract = json.loads(result.stdout)
    assert contract["result"] == "Order ORD-1002 (milk jug) has shipped and is on its way."
    clarify = contract["tool_calls"][0]
    assert clarify["tool_name"] == "agent_clarify" and clarify["output"] == "ORD-1002"


def test_a_terminal_user_is_asked_the_question(tmp_path: Path) -> None:
    """Under a pseudo-terminal the CLI asks and reads the answer from stdin."""
    import pty

    script = (
        "import sys; sys.argv = ['agentfn', 'run', 'triage', 'where is my order?']; "
        "from infra.cli import main; sys.exit(main())"
    )
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=ROOT,
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    import os

    os.write(leader, b"ORD-1002\n")
    out, err = process.communicate(timeout=60)
    os.close(leader)
    os.close(follower)
    assert process.returncode == 0, err.decode()
    assert "milk jug" in out.decode()


def test_a_failed_run_exits_1_and_still_prints_the_error_contract(tmp_path: Path) -> None:
    spec = tmp_path / "agents.yaml"
    spec.write_text(
        "version: 1\n"
        "models:\n"
        "  m: {provider: scripted, script: [{text: 'not json'}, {text: 'still not'}, {text: 'nope'}]}\n"
        "agents:\n"
        "  strict:\n"
        "    description: d\n"
        "    model: m\n"
        "    output_schema: {type: object}\n"
    )
    result = run_agentfn("run", "strict", "go", "-f", str(spec), "--json")
    assert result.returncode == 1
    contract = json.loads(result.stdout)
    assert contract["status"] == "failed" and contract["error_code"] == "OUTPUT_INVALID"
    assert "partial_reasoning" in contract and contract["turns_used"] == 1


def test_spec_errors_exit_2(tmp_path: Path) -> None:
    spec = tmp_path / "agents.yaml"
    spec.write_text("version: 1\nagents: {a: {description: d, model: nope}}\n")
    result = run_agentfn("run", "a", "go", "-f", str(spec))
    assert result.returncode == 2 and "unknown model 'nope'" in result.stderr
