"""`agentfn run` as a user runs it: progress, --json, replies, exit codes, on moto."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT, run_agentfn


def test_demo_agent_uses_tools_and_ends_with_a_structured_result() -> None:
    result = run_agentfn("run", "orders", "My order ORD-1001 arrived damaged.")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer == {"order_id": "ORD-1001", "status": "delivered", "item": "Espresso grinder"}
    progress = result.stderr
    assert "step 1 · demo-orders · 210→18 tokens" in progress
    assert "✓ lookup_order ·" in progress and " ms" in progress
    assert "✓ succeeded in 2 turns · 540 in / 40 out tokens" in progress


def test_a_team_run_shows_who_has_the_conversation_and_nests_the_asked_agent() -> None:
    """The demo team: support asks researcher (a child run, indented), hands over to
    billing, whose refund waits for --approve, and billing hands back to support."""
    result = run_agentfn("run", "support", "My order ORD-1001 arrived damaged.", "--approve")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["resolution"] == "refund_offered" and answer["refund_amount"] == 189.0
    lines = result.stderr.splitlines()
    order = [
        "▶ support · session",
        "    ↳ asking researcher",
        "    ▶ researcher · asked by its supervisor",
        "        ✓ get_time_date",
        "    ✓ ask_researcher · succeeded",
        "  ⇢ billing takes the conversation over · Refund 189.00 EUR",
        "  ⏸ waiting for approval: issue_refund",
        "  ↳ approved",
        "    ✓ issue_refund",
        "  ⇠ billing asks support for help · Refund RF-1001 is issued",
        "✓ succeeded in 8 turns",
    ]
    found = [next(i for i, line in enumerate(lines) if line.startswith(o)) for o in order]
    assert found == sorted(found), result.stderr


def test_json_prints_only_the_result_contract() -> None:
    result = run_agentfn("run", "orders", "damaged order", "--json")
    assert result.returncode == 0, result.stderr
    contract = json.loads(result.stdout)  # nothing but the JSON on stdout
    assert contract["status"] == "succeeded" and contract["agent"] == "orders"
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
    assert [c["tool_name"] for c in contract["tool_calls"]] == ["lookup_order"]
    assert result.stderr == ""


ASKED_CHILD_NEEDS_APPROVAL = """\
version: 1
models:
  lead: {provider: scripted, script: [
    {tool_calls: [{name: ask_clock, arguments: {task: "What time is it in Tokyo?"}}]},
    {text: "The clock says it is late in Tokyo."}]}
  clock: {provider: scripted, script: [
    {tool_calls: [{name: get_time_date, arguments: {timezone: Asia/Tokyo}}]},
    {text: "Late evening."}]}
agents:
  lead:
    description: Asks the clock.
    model: lead
    sub_agents: [{agent: clock, as: tool}]
  clock:
    description: Tells the time, once a person allows it.
    model: clock
    tools: ["builtin:get_time_date"]
    approval: [{tools: ["builtin:get_time_date"]}]
"""


def test_an_asked_agents_approval_is_asked_for_by_the_cli(tmp_path: Path) -> None:
    """The parent waits for its child; the child waits for a person: the CLI finds it."""
    spec = tmp_path / "agents.yaml"
    spec.write_text(ASKED_CHILD_NEEDS_APPROVAL)
    waiting = run_agentfn("run", "lead", "time?", "-f", str(spec))
    assert waiting.returncode == 3, waiting.stderr
    assert "Waiting for approval of: get_time_date" in waiting.stderr
    done = run_agentfn("run", "lead", "time?", "-f", str(spec), "--approve", "--json")
    assert done.returncode == 0, done.stderr
    contract = json.loads(done.stdout)
    assert contract["result"] == "The clock says it is late in Tokyo."
    (asked,) = contract["tool_calls"]
    assert asked["tool_name"] == "ask_clock" and asked["output"] == "Late evening."
    assert asked["child_run_id"] in contract["child_run_ids"]


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
        "from infra.cli.commands import main; sys.exit(main())"
    )
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=_own_state(tmp_path),
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


def _own_state(where: Path) -> dict[str, str]:
    """The environment, with a local state of the test's own (not the repository's)."""
    import os

    return {**os.environ, "AGENTFN_STATE_DIR": str(where / "state")}


def _on_a_terminal(stdout_too: bool, where: Path) -> tuple[str, bytes]:
    """`agentfn run helpdesk` with stderr (and stdout, or a pipe) on a pseudo-terminal: what
    the terminal showed, and what the pipe got."""
    import os
    import pty
    import select

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "infra.cli", "run", "helpdesk", "refunds?"],
        cwd=ROOT, env=_own_state(where), stdin=follower, stderr=follower,
        stdout=follower if stdout_too else subprocess.PIPE,
    )  # fmt: skip
    os.close(follower)
    shown = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            piece = os.read(leader, 4096)
        except OSError:
            break
        if not piece:
            break
        shown += piece
    piped = process.stdout.read() if process.stdout else b""
    assert process.wait(timeout=60) == 0, shown.decode()
    os.close(leader)
    return shown.decode().replace("\r\n", "\n"), piped


def test_on_a_terminal_the_answer_streams_once_and_a_pipe_still_gets_it_whole(
    tmp_path: Path,
) -> None:
    answer = "ORD-1001 (grinder, 189.00 EUR) was delivered"
    shown, _ = _on_a_terminal(stdout_too=True, where=tmp_path)
    assert shown.count(answer) == 1  # streamed with the progress, not printed again
    assert shown.index(answer) < shown.index("step 2 ·")  # before the commit that holds it
    shown, piped = _on_a_terminal(stdout_too=False, where=tmp_path)
    assert shown.count(answer) == 1 and piped.decode().startswith(answer)
