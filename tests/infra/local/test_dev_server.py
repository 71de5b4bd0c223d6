"""`agentfn dev` as a user runs it: a real subprocess serving the HTTP API and the moto AWS
endpoint on loopback, driven over HTTP, by the CLI helpers and by boto3 through an approval
flow, then stopped with SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from infra.local.dev_gateway import match_route, proxy_event
from tests.helpers import ROOT, wait_for

START_TIMEOUT = 60.0
TERMINAL = {"succeeded", "failed", "cancelled"}
AGENTFN = [sys.executable, "-m", "infra.cli"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AGENTFN_"))}
    # A crash of the server (a segfault in a C extension) prints every thread's stack to
    # its stderr, which the fixture shows when the exit code is not 0.
    return {**env, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}


@dataclass
class Dev:
    process: subprocess.Popen[str]
    api: str
    aws: str
    stdout: Path
    stderr: Path

    def agentfn(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*AGENTFN, *args, "--url", self.api],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    yield from serve_dev(tmp_path_factory)


def serve_dev(
    tmp_path_factory: pytest.TempPathFactory,
    *args: str,
    env: dict[str, str] | None = None,
    offline: bool = True,
) -> Iterator[Dev]:
    """`agentfn dev` on free ports until the generator is closed, then stopped by SIGTERM
    (`args`: more options; `env`: more environment). `offline` (the default here): every
    AWS call in moto and nothing kept, so parallel tests on the repo's spec share nothing."""
    logs = tmp_path_factory.mktemp("dev")
    api_port, aws_port = _free_port(), _free_port()
    out, err = logs / "stdout", logs / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            [*AGENTFN, "dev", "--port", str(api_port), "--aws-port", str(aws_port), *args]
            + (["--offline"] if offline else []),
            cwd=ROOT,
            stdout=stdout,
            stderr=stderr,
            text=True,
            env={**_env(), **(env or {})},
        )
    server = Dev(process, f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{aws_port}", out, err)

    def answers() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"agentfn dev exited early:\n{err.read_text()}")
        try:
            return httpx.get(f"{server.api}/agents", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(answers, START_TIMEOUT, "agentfn dev to answer")
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise AssertionError("agentfn dev did not exit on SIGTERM") from None
        assert code == 0, err.read_text()


def _run(dev: Dev, run_id: str) -> dict[str, Any]:
    response = httpx.get(f"{dev.api}/runs/{run_id}", timeout=10)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_an_approval_flow_over_http_the_cli_and_the_aws_endpoint(dev: Dev) -> None:
    started = httpx.post(
        f"{dev.api}/agents/billing/runs",
        json={"input": "Refund ORD-1001, it arrived broken", "wait_seconds": 0},
        timeout=20,
    )
    assert started.status_code == 202, started.text
    run_id = started.json()["run_id"]

    paused = wait_for(
        lambda: (r := _run(dev, run_id))["status"] == "awaiting_approval" and r,
        what="awaiting_approval",
    )
    assert [p["tool_name"] for p in paused["pending_approval"]] == ["issue_refund"]

    status = dev.agentfn("status", run_id)
    assert status.returncode == 0, status.stderr
    assert "awaiting_approval" in status.stdout and "issue_refund" in status.stdout

    follow = subprocess.Popen(
        [*AGENTFN, "events", run_id, "--follow", "--interval", "0.2", "--url", dev.api],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    approved = dev.agentfn("approve", run_id, "--reason", "looks right")
    assert approved.returncode == 0, approved.stderr

    done = wait_for(
        lambda: (r := _run(dev, run_id))["status"] == "succeeded" and r, what="succeeded"
    )
    assert done["result"] == "Refund RF-1001 of 189.00 EUR issued."
    refund = done["tool_calls"][0]
    assert refund["tool_name"] == "issue_refund" and refund["success"]

    # events --follow ends by itself once the run is terminal, each event printed once
    out, errors = follow.communicate(timeout=20)
    assert follow.returncode == 0, errors
    numbers = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert len(numbers) == len(set(numbers)) and len(numbers) >= 4
    for kind in ("run_started", "approval_requested", "approval_decided", "run_completed"):
        assert kind in out
    assert out.index("approval_requested") < out.index("approval_decided")

    as_json = dev.agentfn("status", run_id, "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["status"] == "succeeded"

    # a second decision is the API's 409, shown as an error with exit code 1
    again = dev.agentfn("approve", run_id)
    assert again.returncode == 1 and "409" in again.stderr

    # the same state is visible to any AWS client through the endpoint
    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=dev.aws,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    items = dynamodb.scan(TableName="agentfn-local")["Items"]
    assert sum(run_id in json.dumps(item) for item in items) >= 2

    log = dev.stderr.read_text()
    assert "POST /agents/billing/runs → 202" in log
    assert f"POST /runs/{run_id}/approval → 200" in log
    banner = dev.stdout.read_text()
    assert dev.api in banner and dev.aws in banner and "agentfn-local" in banner


def test_unknown_paths_and_runs_are_answered_not_dropped(dev: Dev) -> None:
    assert httpx.get(f"{dev.api}/nowhere", timeout=10).status_code == 404
    assert httpx.get(f"{dev.api}/runs/no-such-run", timeout=10).status_code == 404
    missing = dev.agentfn("status", "no-such-run")
    assert missing.returncode == 1 and "404" in missing.stderr


def test_the_cli_helpers_exit_2_on_usage_and_1_when_nothing_answers() -> None:
    port = _free_port()
    unreachable = subprocess.run(
        [*AGENTFN, "status", "r1", "--url", f"http://127.0.0.1:{port}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert unreachable.returncode == 1 and "cannot reach" in unreachable.stderr
    bad_edit = subprocess.run(
        [*AGENTFN, "approve", "r1", "--edit", "[1]"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert bad_edit.returncode == 2 and "--edit" in bad_edit.stderr


def test_requests_become_api_gateway_rest_proxy_events() -> None:
    assert match_route("POST", "/runs/r%2F1/approval")[1] == {"run_id": "r/1"}
    assert match_route("DELETE", "/runs/r1") == (None, {})
    event = proxy_event(
        "GET",
        "/runs/r1/events?after=3&after=4",
        [("Host", "127.0.0.1:8321"), ("X-Trace", "a")],
        b"",
    )
    assert event["resource"] == "/runs/{run_id}/events"
    assert event["pathParameters"] == {"run_id": "r1"}
    assert event["queryStringParameters"] == {"after": "4"}
    assert event["multiValueQueryStringParameters"] == {"after": ["3", "4"]}
    assert event["requestContext"]["stage"] == "dev"
    assert event["requestContext"]["path"] == "/dev/runs/r1/events"
    assert event["body"] is None and event["isBase64Encoded"] is False
    binary = proxy_event("POST", "/agents/a/runs", [], b"\xff\x00")
    assert binary["isBase64Encoded"] is True and binary["pathParameters"] == {"agent": "a"}


def test_a_port_in_use_is_a_clear_usage_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [*AGENTFN, "dev", "--offline", "--port", str(_free_port()), "--aws-port", str(port)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )
    assert result.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in result.stderr


def test_the_demo_team_works_over_http_and_its_progress_nests_per_agent(dev: Dev) -> None:
    """support asks researcher (a child run: another execution), hands over to billing
    (another function), whose refund waits for a person; the approval goes to the run."""
    started = httpx.post(
        f"{dev.api}/agents/support/runs",
        json={"input": "My order ORD-1001 arrived damaged.", "wait_seconds": 0},
        timeout=20,
    )
    assert started.status_code == 202, started.text
    run_id = started.json()["run_id"]
    paused = wait_for(
        lambda: (r := _run(dev, run_id))["status"] == "awaiting_approval" and r,
        what="billing's approval",
    )
    assert paused["active_agent"] == "billing" and len(paused["child_run_ids"]) == 1
    assert dev.agentfn("approve", run_id).returncode == 0
    done = wait_for(lambda: (r := _run(dev, run_id))["status"] == "succeeded" and r, what="done")
    assert done["agent_path"] == ["support", "billing", "support"]
    assert done["result"]["resolution"] == "refund_offered"

    tag = f"…{run_id[-6:]} "
    child = f"…{done['child_run_ids'][0][-6:]} "
    log = wait_for(
        lambda: "✓ succeeded in 8 turns" in (text := dev.stderr.read_text()) and text,
        what="the run's last progress line",
    )
    for line in (
        f"{tag}▶ support · session",
        f"{tag}    ↳ asking researcher",
        f"{child}    ▶ researcher · asked by its supervisor",
        f"{tag}  ⇢ billing takes the conversation over",
        f"{tag}  ⇠ billing asks support for help",
    ):
        assert line in log, log


def test_fifty_demo_runs_started_at_once_are_all_answered_and_all_succeed(dev: Dev) -> None:
    """Every connection is accepted (no reset from a short listen backlog) and answered;
    runs still going when their inline wait ends finish on their state machines."""
    answers: dict[int, httpx.Response] = {}

    def start(n: int) -> None:
        answers[n] = httpx.post(
            f"{dev.api}/agents/orders/runs",
            json={"input": f"Where is my grinder? (customer {n})", "wait_seconds": 10},
            timeout=90,
        )

    threads = [threading.Thread(target=start, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(answers) == list(range(50))
    assert {a.status_code for a in answers.values()} <= {200, 202}
    for answer in answers.values():
        run_id = answer.json()["run_id"]
        done = wait_for(lambda r=run_id: _run(dev, r)["status"] in TERMINAL, what="the run's end")
        assert _run(dev, run_id)["status"] == "succeeded", done
