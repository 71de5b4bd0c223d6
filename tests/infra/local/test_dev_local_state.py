"""`agentfn dev` meets the real world as `agentfn run` does: a Bedrock agent's Converse goes
where the user's environment sends it (a loopback recorder, through
AWS_ENDPOINT_URL_BEDROCK_RUNTIME) while the runs table stays in dev's moto, which `aws
--endpoint-url` still reads; without credentials the run fails naming the model and what to
set. dev shares `.agentfn/local/` with `agentfn run`: a run `agentfn run` left waiting is
approved over dev's API, a run started on dev is seen by `agentfn status` without a server.
A workflow `agentfn run` left waiting is approved by `agentfn approve` in another process
and finishes, each tool called once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from tests.helpers import run_agentfn, wait_for
from tests.infra.cli.test_run_real_aws import SPEC as REAL_SPEC
from tests.infra.cli.test_run_real_aws import (  # noqa: F401 - the recorder fixture
    TOOL_ARN,
    Recorder,
    _user_env,
    recorder,
)
from tests.infra.local.test_dev_server import Dev, serve_dev
from tests.infra.local.test_local_state import (  # noqa: F401 - the chat fixture
    APPROVAL_SPEC,
    ChatServer,
    _calls,
    _project,
    chat,
)

WORKFLOW_SPEC = (
    APPROVAL_SPEC
    + """\
  writer:
    description: Writes the report.
    model: w
workflows:
  handle:
    steps:
      - {id: triage, llm: {model: local, prompt: "Triage: {input}"}}
      - {id: act, agent: clerk, input: "{triage}"}
      - {id: report, agent: writer, input: "Report on: {act}"}
"""
).replace(
    "tools:\n  note:",
    """  w:
    provider: scripted
    script:
      - {text: "Report written."}
  local: {provider: ollama, model_id: tiny, base_url: "%(url)s/v1", stream: false}
tools:
  note:""",
)


def _dev(
    factory: pytest.TempPathFactory, spec: Path, env: dict[str, str]
) -> tuple[Dev, Iterator[Dev]]:
    """`agentfn dev -f spec` sharing the spec's local state (not --offline)."""
    server = serve_dev(factory, "-f", str(spec), env=env, offline=False)
    return next(server), server


def _run(dev: Dev, run_id: str) -> dict[str, Any]:
    answer = httpx.get(f"{dev.api}/runs/{run_id}", timeout=10)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _ended(dev: Dev, run_id: str) -> dict[str, Any]:
    return wait_for(
        lambda: (r := _run(dev, run_id))["status"] in {"succeeded", "failed"} and r,
        what=f"run {run_id} to end",
    )


def test_dev_sends_bedrock_to_the_users_endpoint_and_keeps_the_runs_table_local(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    recorder: Recorder,  # noqa: F811
) -> None:
    spec = tmp_path / "agents.yaml"
    spec.write_text(REAL_SPEC % {"arn": TOOL_ARN, "url": recorder.url})
    dev, server = _dev(tmp_path_factory, spec, _user_env(recorder.url, tmp_path))
    try:
        started = httpx.post(
            f"{dev.api}/agents/geo/runs",
            json={"input": "What is the capital of France?", "wait_seconds": 0},
            timeout=20,
        )
        assert started.status_code == 202, started.text
        done = _ended(dev, started.json()["run_id"])
        assert done["status"] == "succeeded", done
        assert "sunny" in done["result"]  # the recorded final answer

        # the moto endpoint still answers `aws --endpoint-url`, with the run in its table
        dynamodb = boto3.client(
            "dynamodb",
            endpoint_url=dev.aws,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        items = dynamodb.scan(TableName="agentfn-local")["Items"]
        assert any(done["run_id"] in json.dumps(item) for item in items)
    finally:
        server.close()
    converse = [r for r in recorder.requests if r["path"].endswith("/converse")]
    assert len(converse) == 2, [r["path"] for r in recorder.requests]
    assert "us.anthropic.claude-sonnet-4-5" in converse[0]["path"].replace("%3A", ":")
    assert "Paris" in json.dumps(json.loads(converse[1]["body"])["messages"][-1])
    for request in converse:  # signed with the user's keys, in the user's region
        scope = request["headers"]["authorization"]
        assert "Credential=AKIAUSERSOWNKEY00000/" in scope and "/us-west-2/" in scope, scope
    (invoke,) = [r for r in recorder.requests if "/invocations" in r["path"]]
    assert "get-capital" in invoke["path"]
    for request in recorder.requests:  # the stack's own resources never left dev's moto
        assert not request["headers"].get("x-amz-target", "").startswith("DynamoDB"), request
        assert "/s3/" not in request["headers"].get("authorization", ""), request
        assert "/states/" not in request["headers"].get("authorization", ""), request
    assert len(recorder.requests) == 3
    log = (tmp_path / ".agentfn" / "local" / "aws.log").read_text()
    assert "What is the capital of France?" in log  # in the local state agentfn run uses


def test_dev_without_credentials_fails_a_bedrock_run_saying_what_to_set(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    spec = tmp_path / "agents.yaml"
    spec.write_text(REAL_SPEC % {"arn": TOOL_ARN, "url": "http://127.0.0.1:9"})
    env = {
        "HOME": str(tmp_path),
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    dev, server = _dev(tmp_path_factory, spec, env)
    try:
        started = httpx.post(
            f"{dev.api}/agents/geo/runs", json={"input": "hi", "wait_seconds": 0}, timeout=20
        )
        assert started.status_code == 202, started.text
        failed = _ended(dev, started.json()["run_id"])
    finally:
        server.close()
    assert failed["status"] == "failed", failed
    assert failed["error_code"] != "INTERNAL", failed
    message = failed["error_message"]
    assert "model 'claude' (Bedrock us.anthropic.claude-sonnet-4-5" in message, message
    assert "no AWS region: set AWS_REGION" in message, message


def test_a_run_left_waiting_by_agentfn_run_is_approved_over_dev_and_dev_runs_are_seen_by_status(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    spec, env = _project(tmp_path, APPROVAL_SPEC)
    waiting = run_agentfn("run", "clerk", "note and refund", "-f", str(spec), env=env)
    assert waiting.returncode == 3, waiting.stderr
    run_id = waiting.stderr.split("agentfn approve ")[1].split()[0]
    assert _calls(tmp_path, "note") == ["first"] and _calls(tmp_path, "refund") == []

    dev, server = _dev(tmp_path_factory, spec, {})
    try:
        seen = _run(dev, run_id)  # dev's API sees the run agentfn run left waiting
        assert seen["status"] == "awaiting_approval", seen
        assert [p["tool_name"] for p in seen["pending_approval"]] == ["refund"]
        listed = httpx.get(f"{dev.api}/runs", timeout=10).json()["runs"]  # the console's list
        assert [(r["run_id"], r["status"], r["input"]) for r in listed] == [
            (run_id, "awaiting_approval", "note and refund")
        ]
        decided = httpx.post(
            f"{dev.api}/runs/{run_id}/approval", json={"approved": True}, timeout=20
        )
        assert decided.status_code == 200, decided.text
        done = _ended(dev, run_id)
        assert done["status"] == "succeeded" and done["result"] == "Noted and refunded.", done
        assert _calls(tmp_path, "note") == ["first"]  # not called again
        assert _calls(tmp_path, "refund") == ["12.5"]  # once, after the approval

        # a run started on dev, and `agentfn status` while dev holds the state (asks dev)
        started = httpx.post(
            f"{dev.api}/agents/clerk/runs", json={"input": "again", "wait_seconds": 0}, timeout=20
        )
        assert started.status_code == 202, started.text
        on_dev = started.json()["run_id"]
        wait_for(lambda: _run(dev, on_dev)["status"] == "awaiting_approval", what="a pause")
        asked = run_agentfn("status", on_dev, "-f", str(spec), env=env)
        assert asked.returncode == 0 and "awaiting_approval" in asked.stdout, asked.stderr
        # approved by the CLI without --url: it goes to dev, whose execution waits on it
        approved = run_agentfn("approve", on_dev, "-f", str(spec), env=env)
        assert approved.returncode == 0, approved.stderr
        assert _ended(dev, on_dev)["status"] == "succeeded"
        assert run_agentfn("local", "reset", "-f", str(spec), env=env).returncode == 1
        second = run_agentfn("dev", "-f", str(spec), "--port", "0", "--aws-port", "0", env=env)
        assert second.returncode == 2, second.stderr  # one dev per local state
        assert f"another agentfn dev ({dev.api}) serves the local state" in second.stderr
    finally:
        server.close()
    # dev has stopped: both runs are in the local state, read without any server
    for known in (run_id, on_dev):
        status = run_agentfn("status", known, "-f", str(spec), "--json", env=env)
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["status"] == "succeeded"


def test_a_workflow_left_waiting_by_agentfn_run_is_approved_by_another_process(
    tmp_path: Path,
    chat: ChatServer,  # noqa: F811
) -> None:
    spec, env = _project(tmp_path, WORKFLOW_SPEC % {"url": chat.url})
    waiting = run_agentfn("run", "handle", "refund ORD-1", "-f", str(spec), env=env)
    assert waiting.returncode == 3, waiting.stderr
    assert "agentfn approve " in waiting.stderr, waiting.stderr
    step_run = waiting.stderr.split("agentfn approve ")[1].split()[0]
    assert _calls(tmp_path, "note") == ["first"] and _calls(tmp_path, "refund") == []
    assert len(chat.bodies) == 1  # the llm step answered

    approved = run_agentfn("approve", step_run, "-f", str(spec), env=env)
    assert approved.returncode == 0, approved.stderr
    assert "Report written." in approved.stdout  # the workflow's last step ran
    assert _calls(tmp_path, "note") == ["first"]  # the first step's earlier tool: once
    assert _calls(tmp_path, "refund") == ["12.5"]
    assert len(chat.bodies) == 1  # the finished llm step was passed over, not asked again

    status = run_agentfn("status", step_run, "-f", str(spec), "--json", env=env)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["status"] == "succeeded"


def test_a_workflow_left_waiting_by_agentfn_run_is_approved_over_dev(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    chat: ChatServer,  # noqa: F811
) -> None:
    spec, env = _project(tmp_path, WORKFLOW_SPEC % {"url": chat.url})
    waiting = run_agentfn("run", "handle", "refund ORD-1", "-f", str(spec), env=env)
    assert waiting.returncode == 3, waiting.stderr
    step_run = waiting.stderr.split("agentfn approve ")[1].split()[0]

    dev, server = _dev(tmp_path_factory, spec, {})
    try:
        dynamodb = boto3.client(
            "dynamodb",
            endpoint_url=dev.aws,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        (workflow_key,) = [
            item["pk"]["S"]
            for item in dynamodb.scan(TableName="agentfn-local")["Items"]
            if item["pk"]["S"].startswith("WF#")
        ]
        workflow = f"{dev.api}/workflow-runs/{workflow_key[3:]}"
        assert httpx.get(workflow, timeout=10).json()["status"] == "running"
        decided = httpx.post(
            f"{dev.api}/runs/{step_run}/approval", json={"approved": True}, timeout=20
        )
        assert decided.status_code == 200, decided.text
        view = wait_for(
            lambda: (v := httpx.get(workflow, timeout=10).json())["status"] != "running" and v,
            what="the workflow to end on dev",
        )
    finally:
        server.close()
    assert view["status"] == "succeeded", view
    assert view["result"] == "Report written."
    assert _calls(tmp_path, "note") == ["first"] and _calls(tmp_path, "refund") == ["12.5"]
    assert len(chat.bodies) == 1  # the llm step that had answered was not asked again


TEAM_SPEC = """\
version: 1
models:
  boss-m:
    provider: scripted
    script:
      - {tool_calls: [{name: ask_clerk, arguments: {task: refund ORD-1}}]}
      - {text: "The clerk refunded it."}
  m:
    provider: scripted
    script:
      - {tool_calls: [{name: note, arguments: {text: first}}]}
      - {tool_calls: [{name: refund, arguments: {amount: 12.5}}]}
      - {text: "Noted and refunded."}
tools:
  note: {type: python, handler: "tools.counting_ops:note", description: Take a note.}
  refund: {type: python, handler: "tools.counting_ops:refund", description: Refund.}
agents:
  boss:
    description: Asks the clerk.
    model: boss-m
    sub_agents: [{agent: clerk, as: tool}]
  clerk:
    description: Notes, then refunds once a person allows it.
    model: m
    tools: [note, refund]
    approval: [{tools: [refund]}]
"""


def test_an_asked_agents_approval_left_by_agentfn_run_is_decided_over_dev(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The child waits, its parent waits for it; both executions lived in `agentfn run`:
    dev gives both new ones (the parent first), and the parent finishes after the child."""
    spec, env = _project(tmp_path, TEAM_SPEC)
    waiting = run_agentfn("run", "boss", "refund ORD-1", "-f", str(spec), env=env)
    assert waiting.returncode == 3, waiting.stderr
    child = waiting.stderr.split("agentfn approve ")[1].split()[0]
    dev, server = _dev(tmp_path_factory, spec, {})
    try:
        parent = _run(dev, child)["parent_run_id"]
        assert _run(dev, parent)["status"] == "awaiting_children"
        decided = httpx.post(
            f"{dev.api}/runs/{child}/approval", json={"approved": True}, timeout=20
        )
        assert decided.status_code == 200, decided.text
        done = _ended(dev, parent)
    finally:
        server.close()
    assert done["status"] == "succeeded" and done["result"] == "The clerk refunded it.", done
    assert _calls(tmp_path, "note") == ["first"] and _calls(tmp_path, "refund") == ["12.5"]
