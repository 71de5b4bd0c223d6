"""Triggers over `agentfn dev` (a real subprocess on loopback) and `agentfn trigger`.

A correctly signed GitHub-style webhook starts a run whose input holds the rendered title
(202 with the run id); a bad signature is 401 and starts nothing; the same delivery id again
answers the same run; a schedule due in the next seconds fires once (the dev scheduler's
clock starts two seconds before its due time: AGENTFN_DEV_SCHEDULE_CLOCK, instead of a wait
for the next minute of the wall clock); the dev console lists
the triggered runs waiting for a person; `agentfn trigger AGENT inbox --event sqs.json` runs
the agent on the message."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from infra.local.dev_triggers import CLOCK_ENV
from runtime.triggers.starter import run_id_for
from tests.helpers import wait_for
from tests.infra.local.test_dev_console import browser  # noqa: F401  (the fixture)
from tests.infra.local.test_dev_server import AGENTFN, Dev, _env, serve_dev

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "triggers" / "agents.yaml"
SECRET = "gh-dev-secret"
#: Where the dev scheduler's clock starts: two seconds before `soon` is due (09:00 UTC).
CLOCK_START = "2030-01-01T08:59:58Z"
DUE = "2030-01-01T09:00:00Z"


def _project(folder: Path) -> Path:
    """The fixture spec, plus a schedule `soon` due every day at 09:00 UTC (two seconds
    after the scheduler's clock starts, CLOCK_START), and a webhook on the agent that asks."""
    folder.mkdir(parents=True, exist_ok=True)
    text = FIXTURE.read_text()
    soon = (
        "      - name: soon\n"
        '        schedule: "cron(0 9 * * ? *)"\n'
        '        input: "Wake up at {time}"\n'
    )
    text = text.replace("      - name: inbox\n", soon + "      - name: inbox\n")
    ask = (
        "      - name: ask\n"
        '        webhook: {secret: "${secret:gh-hook}", signature: hmac-sha256, header: X-Signature}\n'
        '        input: "Stock is low on {body.sku}"\n'
    )
    text = text.replace("      - name: low-stock\n", ask + "      - name: low-stock\n")
    path = folder / "agents.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    spec = _project(tmp_path_factory.mktemp("project"))
    env = {
        "AGENTFN_SECRET_GH_HOOK": SECRET,
        "AGENTFN_SECRET_STRIPE_HOOK": "stripe-dev-secret",
        CLOCK_ENV: CLOCK_START,
    }
    yield from serve_dev(tmp_path_factory, "-f", str(spec), env=env)


def _post(dev: Dev, body: bytes, delivery: str, secret: str = SECRET) -> httpx.Response:
    mac = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": f"sha256={mac}",
    }
    return httpx.post(f"{dev.api}/hooks/support/github", content=body, headers=headers, timeout=30)


def _run(dev: Dev, run_id: str) -> dict[str, Any]:
    answer = httpx.get(f"{dev.api}/runs/{run_id}", timeout=10)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_a_signed_github_webhook_starts_a_run_once_and_a_bad_one_starts_nothing(
    dev: Dev,
) -> None:
    server = dev
    body = json.dumps({"action": "opened", "issue": {"title": "Crash on login"}}).encode()
    forged = _post(server, body, "delivery-1", secret="guessed")
    assert forged.status_code == 401, forged.text
    assert forged.json()["error_code"] == "BAD_SIGNATURE"
    missing = httpx.get(
        f"{server.api}/runs/{run_id_for('agent', 'support', 'github', 'delivery-1')}"
    )
    assert missing.status_code == 404  # nothing started

    started = _post(server, body, "delivery-1")
    assert started.status_code == 202, started.text
    run_id = started.json()["run_id"]
    assert started.json()["trigger"] == {
        "name": "github",
        "kind": "webhook",
        "event_id": "delivery-1",
    }
    events = httpx.get(f"{server.api}/runs/{run_id}/events", timeout=10).json()["events"]
    assert events[0]["type"] == "run_started"
    assert events[0]["data"]["input"] == "New issue: Crash on login"
    assert events[0]["data"]["trigger"]["event_id"] == "delivery-1"

    again = _post(server, body, "delivery-1")  # GitHub redelivers
    assert again.status_code == 202 and again.json()["run_id"] == run_id
    done = wait_for(lambda: (r := _run(server, run_id))["status"] == "succeeded" and r)
    assert done["trigger"]["name"] == "github"

    unknown = httpx.post(
        f"{server.api}/hooks/support/nope",
        content=b"{}",
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    assert unknown.status_code == 404


def test_a_schedule_due_in_the_next_seconds_fires_once(dev: Dev) -> None:
    server = dev

    def fired() -> list[str]:
        return [
            line
            for line in server.stderr.read_text().splitlines()
            if line.startswith("schedule support/soon fired")
        ]

    lines = wait_for(fired, timeout=30, what="the schedule to fire")
    time.sleep(3)  # several scheduler ticks later: still once for that due time
    assert len(fired()) == 1, fired()
    run_id = lines[0].rsplit(" ", 1)[1]
    run = wait_for(lambda: (r := _run(server, run_id))["status"] == "succeeded" and r)
    assert run["trigger"]["kind"] == "schedule"
    assert run["trigger"]["event_id"] == DUE  # the due time the expression gives, to the second


def test_the_console_lists_triggered_runs_waiting_for_a_person(
    dev: Dev,
    browser: Any,  # noqa: F811  (test_dev_console's fixture)
) -> None:
    server = dev
    body = json.dumps({"sku": "SKU-9"}).encode()
    mac = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    started = httpx.post(
        f"{server.api}/hooks/restock/ask",
        content=body,
        headers={"X-Signature": mac, "Content-Type": "application/json"},
        timeout=30,
    )
    assert started.status_code == 202, started.text
    run_id = started.json()["run_id"]
    wait_for(lambda: _run(server, run_id)["status"] == "awaiting_input", what="the question")

    def waiting() -> list[dict[str, Any]]:
        answer = httpx.get(f"{server.api}/runs?waiting=triggered", timeout=10)
        assert answer.status_code == 200, answer.text
        listed: list[dict[str, Any]] = answer.json()["runs"]
        return listed

    listed = wait_for(lambda: [r for r in waiting() if r["run_id"] == run_id], what="the list")
    assert listed[0]["trigger"]["name"] == "ask" and listed[0]["status"] == "awaiting_input"
    assert all(r.get("trigger") for r in waiting())  # only triggered runs
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{server.api}/")  # the page shows it too
    shown = WebDriverWait(browser, 30).until(
        lambda b: [e.text for e in b.find_elements(By.CSS_SELECTOR, "#triggered-waiting li")]
    )
    assert any(f"restock · {run_id[:8]} · webhook ask" in text for text in shown), shown
    # The pattern of seed 000: someone reads the question and answers; the run goes on.
    reply = httpx.post(f"{server.api}/runs/{run_id}/reply", json={"input": "Lyon"}, timeout=30)
    assert reply.status_code in (200, 202), reply.text
    wait_for(lambda: _run(server, run_id)["status"] == "succeeded", what="the answer")
    assert not [r for r in waiting() if r["run_id"] == run_id]


def test_agentfn_trigger_runs_the_agent_on_an_sqs_message(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(FIXTURE, project / "agents.yaml")
    message = {
        "Records": [
            {
                "messageId": "4c1b8a4e-0000-4000-8000-000000000001",
                "receiptHandle": "r",
                "body": json.dumps({"text": "Where is order 42?"}),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:whatever",
                "awsRegion": "us-east-1",
            }
        ]
    }
    (project / "sqs.json").write_text(json.dumps(message))
    args = [*AGENTFN, "trigger", "support", "inbox", "--event", "sqs.json", "--json"]
    first = subprocess.run(
        args, cwd=project, capture_output=True, text=True, env=_env(), timeout=120
    )
    assert first.returncode == 0, first.stderr
    result = json.loads(first.stdout)
    assert result["status"] == "succeeded" and result["result"] == "done"
    assert result["trigger"] == {
        "name": "inbox",
        "kind": "queue",
        "event_id": "4c1b8a4e-0000-4000-8000-000000000001",
    }
    assert result["run_id"] == run_id_for(
        "agent", "support", "inbox", result["trigger"]["event_id"]
    )
    again = subprocess.run(
        args, cwd=project, capture_output=True, text=True, env=_env(), timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["run_id"] == result["run_id"]  # the same message: one run
