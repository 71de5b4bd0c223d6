"""`remote_agents` end to end on `agentfn dev` (a real subprocess on loopback): an agent asks
another over A2A through its `ask_<name>` tool, which sends the message with the a2a-sdk
client (through the SSRF guard, loopback allowed by `allow_private`), and the run waits
for the task as for a child, its state machine looking again every `poll_interval`. When
the remote task needs input, the asking run shows it as its own pending approval, and the
decision sent to the asking run reaches the remote task."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import ROOT, wait_for
from tests.infra.local.test_dev_server import AGENTFN, Dev, _env, _free_port

SPEC = """
version: 1
defaults:
  model: asker-model
  protocols: {a2a: true}
models:
  asker-model:
    provider: scripted
    script:
      - tool_calls: [{name: ask_partner, arguments: {task: "Where is ORD-1001?"}}]
      - text: "Our partner answered; see the tool result."
  careful-model:
    provider: scripted
    script:
      - tool_calls: [{name: ask_careful_partner, arguments: {task: "What time is it?"}}]
      - text: "Done."
  partner-model:
    provider: scripted
    script:
      - text: "ORD-1001 was delivered on 2026-11-18."
  curious-model:
    provider: scripted
    script:
      - tool_calls: [{name: ask_curious_partner, arguments: {task: "Check my order"}}]
      - text: "Asked."
  questioning-model:
    provider: scripted
    script:
      - tool_calls: [{name: agent_clarify, arguments: {question: "Which order is it?"}}]
      - text: "That order is on its way."
  clock-model:
    provider: scripted
    script:
      - tool_calls: [{name: get_time_date, arguments: {}}]
      - text: "I looked at the clock."
remote_agents:
  partner:
    a2a: http://127.0.0.1:{port}/a2a/helper
    description: Knows where every order is.
    allow_private: [127.0.0.1]
    poll_interval: 1s
  careful_partner:
    a2a: http://127.0.0.1:{port}/a2a/clock
    allow_private: [127.0.0.1]
    poll_interval: 1s
  curious_partner:
    a2a: http://127.0.0.1:{port}/a2a/questioner
    allow_private: [127.0.0.1]
    poll_interval: 1s
  blocked:
    a2a: http://127.0.0.1:{port}/a2a/helper
agents:
  helper:
    description: Answers where an order is.
    model: partner-model
    system_prompt: You answer where orders are.
  clock:
    description: Tells the time, once a person allows it.
    model: clock-model
    system_prompt: You tell the time.
    tools: ["builtin:get_time_date"]
    approval: [{tools: ["builtin:get_time_date"]}]
  questioner:
    description: Asks which order.
    model: questioning-model
    system_prompt: You ask which order.
  curious:
    description: Asks an agent that asks back.
    model: curious-model
    system_prompt: You ask the curious partner.
    sub_agents: [{agent: curious_partner, as: tool}]
  asker:
    description: Asks the partner agent over A2A.
    system_prompt: You ask the partner.
    sub_agents: [{agent: partner, as: tool}]
  careful:
    description: Asks an agent whose tool needs approval.
    model: careful-model
    system_prompt: You ask the careful partner.
    sub_agents: [{agent: careful_partner, as: tool}]
"""


SPEC_PATH: Path | None = None


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    folder = tmp_path_factory.mktemp("remote")
    global SPEC_PATH
    port, aws_port = _free_port(), _free_port()
    spec = folder / "agents.yaml"
    spec.write_text(SPEC.replace("{port}", str(port)))
    SPEC_PATH = spec
    out, err = folder / "stdout", folder / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            [
                *AGENTFN,
                "dev",
                "-f",
                str(spec),
                "--port",
                str(port),
                "--aws-port",
                str(aws_port),
                "--no-reload",
            ],
            cwd=ROOT,
            stdout=stdout,
            stderr=stderr,
            text=True,
            env=_env(),
        )
    server = Dev(process, f"http://127.0.0.1:{port}", f"http://127.0.0.1:{aws_port}", out, err)

    def answers() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"agentfn dev exited early:\n{err.read_text()}")
        try:
            return httpx.get(f"{server.api}/agents", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(answers, 60.0, "agentfn dev to answer")
        yield server
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0, Path(err).read_text()


def run(dev: Dev, run_id: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{dev.api}/runs/{run_id}", timeout=10).json()
    return body


def start(dev: Dev, agent: str, text: str) -> str:
    started = httpx.post(
        f"{dev.api}/agents/{agent}/runs", json={"input": text, "wait_seconds": 0}, timeout=30
    )
    assert started.status_code == 202, started.text
    return str(started.json()["run_id"])


def test_an_agent_asks_another_over_a2a_and_answers_with_its_result(dev: Dev) -> None:
    run_id = start(dev, "asker", "Where is my order ORD-1001?")
    done = wait_for(
        lambda: (r := run(dev, run_id))["status"] in {"succeeded", "failed"} and r, 60.0, "asker"
    )
    assert done["status"] == "succeeded", done
    (ask,) = [c for c in done["tool_calls"] if c["tool_name"] == "ask_partner"]
    assert ask["success"] and ask["output"] == "ORD-1001 was delivered on 2026-11-18."
    helper_runs = [line for line in dev.stderr.read_text().splitlines() if "▶ helper" in line]
    assert helper_runs, "the partner's run is a run of the local helper agent, reached over A2A"


def test_a_remote_approval_is_the_asking_runs_own_and_the_decision_reaches_it(dev: Dev) -> None:
    run_id = start(dev, "careful", "What time is it, per the partner?")

    def waiting() -> dict[str, Any] | bool:
        body = run(dev, run_id)
        child = (body.get("children") or [{}])[0]
        return child.get("status") == "awaiting_approval" and body

    paused = wait_for(waiting, 60.0, "the remote approval to surface")
    (child,) = paused["children"]
    assert [p["tool_name"] for p in child["pending_approval"]] == ["get_time_date"]
    task = httpx.post(
        f"{dev.api}/a2a/careful",
        json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": run_id}},
        timeout=10,
    ).json()["result"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # A2A shows it too
    assert "get_time_date" in task["status"]["message"]["parts"][0]["text"]

    decided = httpx.post(f"{dev.api}/runs/{run_id}/approval", json={"approved": True}, timeout=30)
    assert decided.status_code == 200, decided.text
    done = wait_for(
        lambda: (r := run(dev, run_id))["status"] in {"succeeded", "failed"} and r, 60.0, "careful"
    )
    assert done["status"] == "succeeded", done
    (ask,) = [c for c in done["tool_calls"] if c["tool_name"] == "ask_careful_partner"]
    assert ask["success"] and ask["output"] == "I looked at the clock."


def test_the_ssrf_guard_refuses_loopback_unless_allowed(tmp_path: Path) -> None:
    import asyncio

    from runtime.protocols.a2a_client import check
    from runtime.spec.protocols import RemoteAgent
    from runtime.store.base import RemoteTask
    from runtime.structs import dump

    config = RemoteAgent(a2a="http://127.0.0.1:9/a2a/helper")
    seen = asyncio.run(check(config, RemoteTask(), "hi", "m-1", lambda ref: ""))
    assert seen.error is not None and "127.0.0.1" in seen.error and "refused" in seen.error
    metadata = RemoteAgent(a2a="http://169.254.169.254/latest", allow_private=["169.254.0.0/16"])
    seen = asyncio.run(check(metadata, RemoteTask(), "hi", "m-1", lambda ref: ""))
    assert seen.error is not None and "refused" in seen.error
    assert json.dumps(dump(seen))  # what the run keeps is plain JSON


def test_a_remote_question_is_answered_through_the_asking_runs_a2a_task(dev: Dev) -> None:
    run_id = start(dev, "curious", "Is my order on its way?")

    def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer: dict[str, Any] = httpx.post(f"{dev.api}/a2a/curious", json=body, timeout=30).json()
        return answer

    def asking() -> dict[str, Any] | bool:
        task = rpc("GetTask", {"id": run_id})["result"]
        return task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED" and task

    task = wait_for(asking, 60.0, "the remote question to surface")
    assert "Which order is it?" in task["status"]["message"]["parts"][0]["text"]
    message = {
        "messageId": "r1",
        "role": "ROLE_USER",
        "taskId": run_id,
        "parts": [{"text": "ORD-1002"}],
    }
    answered = rpc("SendMessage", {"message": message})
    assert "result" in answered, answered
    done = wait_for(
        lambda: (r := run(dev, run_id))["status"] in {"succeeded", "failed"} and r, 60.0, "curious"
    )
    assert done["status"] == "succeeded", done
    (ask,) = [c for c in done["tool_calls"] if c["tool_name"] == "ask_curious_partner"]
    assert ask["output"] == "That order is on its way."


def test_agentfn_run_in_one_process_waits_for_the_remote_task_itself(dev: Dev) -> None:
    """No state machine here: the engine looks at the task `poll_interval` apart."""
    assert SPEC_PATH is not None
    done = subprocess.run(
        [
            *AGENTFN,
            "run",
            "-f",
            str(SPEC_PATH),
            "asker",
            "Where is ORD-1001?",
            "--json",
            "--offline",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    (ask,) = [c for c in result["tool_calls"] if c["tool_name"] == "ask_partner"]
    assert ask["output"] == "ORD-1001 was delivered on 2026-11-18."


def test_cancelling_the_asking_run_cancels_the_remote_task(dev: Dev) -> None:
    run_id = start(dev, "careful", "What time is it? (to be cancelled)")

    def remote_task() -> str | bool:
        body = run(dev, run_id)
        child = (body.get("children") or [{}])[0]
        return child.get("status") == "awaiting_approval" and str(child["remote_task_id"])

    task_id = wait_for(remote_task, 60.0, "the remote approval to surface")
    cancelled = httpx.post(f"{dev.api}/runs/{run_id}/cancel", json={}, timeout=30)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    remote = run(dev, task_id)  # the remote task is a run of the local `clock` agent
    assert remote["status"] == "cancelled", remote
