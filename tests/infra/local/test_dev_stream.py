"""Live runs on `agentfn dev` (a real subprocess): SSE streams of a new run and of a run
already under way, many watchers at once, Last-Event-ID resumption without a gap or a
duplicate, the answer's text as chunks, a watcher leaving without stopping the run, the
long poll of the REST API, and `agentfn events --follow` on top of it all."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.helpers import ROOT, wait_for
from tests.infra.local.test_dev_server import AGENTFN, Dev, _env, _run, serve_dev


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    yield from serve_dev(tmp_path_factory)


def read_sse(
    response: httpx.Response, stop_after: int | None = None
) -> list[tuple[str, Any, str | None]]:
    """(event, data, id) for each event of an open stream, until it ends (or `stop_after`)."""
    seen: list[tuple[str, Any, str | None]] = []
    event, data, ident = "message", [], None
    for line in response.iter_lines():
        if line == "":
            if data:
                seen.append((event, json.loads("\n".join(data)), ident))
                if stop_after is not None and len(seen) >= stop_after:
                    break
            event, data, ident = "message", [], None
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line.startswith("id:"):
            ident = line[3:].strip()
    return seen


def _events(seen: list[tuple[str, Any, str | None]]) -> list[dict[str, Any]]:
    return [data for kind, data, _ in seen if kind != "chunk"]


def test_a_run_started_with_accept_event_stream_streams_from_its_first_event(dev: Dev) -> None:
    with httpx.stream(
        "POST", f"{dev.api}/agents/helpdesk/runs", json={"input": "How long do refunds take?"},
        headers={"Accept": "text/event-stream"}, timeout=30,
    ) as response:  # fmt: skip
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        seen = read_sse(response)
    events = _events(seen)
    assert [e["seq"] for e in events] == list(range(len(events)))  # no gap, no duplicate
    assert [ident for kind, _, ident in seen if kind != "chunk"] == [str(e["seq"]) for e in events]
    assert events[0]["type"] == "run_started" and events[-1]["type"] == "run_completed"
    run_id = events[0]["run_id"]
    answer = _run(dev, run_id)["result"]
    chunks = [data for kind, data, _ in seen if kind == "chunk"]
    assert len(chunks) > 3 and all(c["run_id"] == run_id for c in chunks)
    last_turn = max(c["turn"] for c in chunks)
    assert "".join(c["text"] for c in chunks if c["turn"] == last_turn) == answer
    # the chunks of the answer come before the commit that holds it
    order = [kind if kind == "chunk" else data["type"] for kind, data, _ in seen]
    assert order.index("chunk") < len(order) - 1 - order[::-1].index("model_response")


def _paused_billing_run(dev: Dev) -> str:
    started = httpx.post(
        f"{dev.api}/agents/billing/runs",
        json={"input": "Refund ORD-1001, it arrived broken", "wait_seconds": 0}, timeout=20,
    )  # fmt: skip
    run_id = str(started.json()["run_id"])
    wait_for(lambda: _run(dev, run_id)["status"] == "awaiting_approval", what="approval")
    return run_id


def test_many_watchers_attach_late_resume_and_leave_without_stopping_the_run(dev: Dev) -> None:
    run_id = _paused_billing_run(dev)
    results: dict[str, list[tuple[str, Any, str | None]]] = {}

    def watch(name: str, headers: dict[str, str]) -> None:
        with httpx.stream(
            "GET", f"{dev.api}/runs/{run_id}/stream", headers=headers, timeout=30
        ) as r:
            results[name] = read_sse(r)

    threads = [threading.Thread(target=watch, args=(f"w{i}", {})) for i in range(8)]
    threads.append(threading.Thread(target=watch, args=("resumed", {"Last-Event-ID": "1"})))
    for thread in threads:
        thread.start()
    # one more watcher that goes away early: the run does not notice
    with httpx.stream("GET", f"{dev.api}/agents/billing/runs/{run_id}/stream", timeout=30) as r:
        assert len(read_sse(r, stop_after=2)) == 2
    time.sleep(0.5)  # the watchers are waiting on the live tail
    approved = httpx.post(f"{dev.api}/runs/{run_id}/approval", json={"approved": True}, timeout=20)
    assert approved.status_code == 200, approved.text
    for thread in threads:
        thread.join(timeout=30)
    assert _run(dev, run_id)["status"] == "succeeded"
    full = [e["seq"] for e in _events(results["w0"])]
    assert full == list(range(len(full))) and len(full) > 6
    for name, seen in results.items():
        numbers = [e["seq"] for e in _events(seen)]
        expected = full[2:] if name == "resumed" else full
        assert numbers == expected, name  # every event once, in order, none missed
        assert _events(seen)[-1]["type"] == "run_completed"
    # resuming after the last event of a finished run ends at once, with nothing
    last = {"Last-Event-ID": str(full[-1])}
    with httpx.stream("GET", f"{dev.api}/runs/{run_id}/stream", headers=last, timeout=5) as r:
        assert read_sse(r) == []


def test_unknown_runs_404_and_the_long_poll_answers_when_the_next_event_comes(dev: Dev) -> None:
    missing = httpx.get(f"{dev.api}/runs/no-such-run/stream", timeout=10)
    assert missing.status_code == 404 and missing.json()["error_code"]
    run_id = _paused_billing_run(dev)
    last = httpx.get(f"{dev.api}/runs/{run_id}/events", timeout=10).json()["next_after"]
    answer: dict[str, Any] = {}

    def poll() -> None:
        started = time.monotonic()
        page = httpx.get(f"{dev.api}/runs/{run_id}/events", params={"after": last, "wait": 10}, timeout=20)  # fmt: skip
        answer.update(page.json(), took=time.monotonic() - started)

    poller = threading.Thread(target=poll)
    poller.start()
    time.sleep(1.0)
    assert poller.is_alive()  # it waits: nothing has happened yet
    httpx.post(f"{dev.api}/runs/{run_id}/approval", json={"approved": True}, timeout=20)
    poller.join(timeout=15)
    assert answer["events"] and answer["events"][0]["type"] == "approval_decided"
    assert 1.0 <= answer["took"] < 5.0
    bad = httpx.get(f"{dev.api}/runs/{run_id}/events", params={"wait": 99}, timeout=10)
    assert bad.status_code == 400 and "wait" in bad.text


def test_events_follow_prints_the_answer_as_it_streams(dev: Dev) -> None:
    run_id = _paused_billing_run(dev)
    follow = subprocess.Popen(
        [*AGENTFN, "events", run_id, "--follow", "--url", dev.api],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip
    assert follow.stdout is not None
    lines = []
    while "approval_requested" not in "".join(lines):  # attached: the past is printed
        lines.append(follow.stdout.readline())
    httpx.post(f"{dev.api}/runs/{run_id}/approval", json={"approved": True}, timeout=20)
    out, errors = follow.communicate(timeout=60)
    assert follow.returncode == 0, errors
    answer = _run(dev, run_id)["result"]
    assert f"      {answer}\n" in out and "run_completed" in out
    numbers = [line.split()[0] for line in "".join(lines).splitlines() + out.splitlines()]
    numbers = [n for n in numbers if n.isdigit()]
    assert numbers == [str(n) for n in range(len(numbers))]  # each event once, in order
