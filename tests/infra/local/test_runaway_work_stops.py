"""Work abandoned past its timeout neither burns a core nor keeps `agentfn run` alive.

A real `agentfn run` (a subprocess) on a project whose scripted model sends a recursive CTE
that never ends to `database_query` (tool timeout 2 s), then answers; a sync Python
`pre_response` hook sleeps 60 s past its 3 s timeout. While the hook sleeps, the process's
threads are sampled: the interrupted statement must not be running any more (before the
fix its thread looped in SQLite for as long as the process lived). Then the process must
exit on its own, promptly: the sleeping hook's thread must not hold it up (before the fix
the process never exited: the SQLite thread never ended).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import yaml

from infra.local.dev_server import SHUTDOWN_GRACE_SECONDS
from tests.helpers import ROOT

RUNAWAY = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT max(x) FROM n"
HOOK = """
import os, time
from pathlib import Path

def slow(payload):
    Path(os.environ["HOOK_STARTED"]).write_text("sleeping")
    time.sleep(60)
"""


def _project(tmp_path: Path) -> Path:
    with sqlite3.connect(tmp_path / "shop.db") as db:
        db.execute("CREATE TABLE orders (id TEXT)")
    package = tmp_path / "runawaytools"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "policy.py").write_text(HOOK)
    spec = {
        "version": 1,
        "tools_package": "runawaytools",
        "models": {
            "m": {
                "provider": "scripted",
                "script": [
                    {"tool_calls": [{"name": "database_query", "arguments": {"sql": RUNAWAY}}]},
                    {"text": "done"},
                ],
            }
        },
        "databases": {"shop": {"kind": "sqlite", "path": "shop.db"}},
        "agents": {
            "a": {
                "description": "d",
                "model": "m",
                "tool_timeout": "2s",
                "tools": ["builtin:database_query"],
                "databases": {"shop": {"read": ["orders"]}},
                "hooks": [
                    {
                        "event": "pre_response",
                        "type": "python",
                        "handler": "runawaytools.policy:slow",
                        "timeout": "3s",
                    }
                ],
            }
        },
    }
    path = tmp_path / "agents.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _busy_threads(pid: int) -> int:
    """Threads of the process other than its main one that are running or runnable now."""
    busy = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # the thread ended meanwhile
        busy += task.name != str(pid) and state == "R"
    return busy


def _busy_share(pid: int, seconds: float) -> float:
    """The share of samples, over `seconds`, in which some thread was busy. Unlike CPU time
    this does not depend on how loaded the machine is: a thread looping in SQLite is
    runnable whether or not it gets a core."""
    samples: list[bool] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        samples.append(_busy_threads(pid) > 0)
        time.sleep(0.05)
    return sum(samples) / len(samples)


def test_a_runaway_query_is_interrupted_and_a_sleeping_hook_does_not_hold_up_exit(
    tmp_path: Path,
) -> None:
    spec = _project(tmp_path)
    started = tmp_path / "hook-started"
    env = {**os.environ, "HOOK_STARTED": str(started), "AWS_DEFAULT_REGION": "us-east-1"}
    began = time.monotonic()
    agentfn = subprocess.Popen(
        [sys.executable, "-m", "infra.cli", "run", "a", "count", "-f", str(spec)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        while not started.exists():
            assert agentfn.poll() is None, agentfn.communicate()
            assert time.monotonic() - began < 60, "the hook never ran"
            time.sleep(0.05)
        # the query timed out (2 s) before the answer, and the hook sleeps now: sample
        time.sleep(0.3)
        busy = _busy_share(agentfn.pid, 2.0)
        assert busy < 0.25, f"a thread was busy in {busy:.0%} of 2 s: still querying"
        hook_began = time.monotonic()
        out, err = agentfn.communicate(timeout=30)
        exited_after = time.monotonic() - hook_began
    finally:
        agentfn.kill()
    assert "timed out after 2s" in out + err or "stopped after 2s" in out + err, err
    assert "done" in out, (out, err)
    # the hook's timeout (3 s, ~2.3 s of it already waited) and the end of the run
    assert exited_after < 6, f"agentfn run exited {exited_after:.1f} s after the hook began"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_sigterm_stops_agentfn_dev_while_a_query_runs(tmp_path: Path) -> None:
    """`agentfn dev` ignored SIGTERM while a run's query looped: its thread held the exit.
    Here the tool timeout is a minute, so the query is still running when SIGTERM comes;
    the dev server gives requests in flight its grace, and then the process must end."""
    spec = _project(tmp_path)
    data = yaml.safe_load(spec.read_text())
    data["agents"]["a"]["tool_timeout"] = "60s"
    spec.write_text(yaml.safe_dump(data))
    port, aws_port = _free_port(), _free_port()
    env = {**os.environ, "HOOK_STARTED": str(tmp_path / "hook"), "AWS_DEFAULT_REGION": "us-east-1"}
    args = ["dev", "-f", str(spec), "--port", str(port), "--aws-port", str(aws_port)]
    errors = tmp_path / "stderr"
    with errors.open("w") as sink:
        agentfn = subprocess.Popen(
            [sys.executable, "-m", "infra.cli", *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            stdin=subprocess.DEVNULL,
        )
    try:
        began = time.monotonic()
        while not _listening(port):
            assert agentfn.poll() is None, errors.read_text()
            assert time.monotonic() - began < 90, "agentfn dev did not start"
            time.sleep(0.1)
        threading.Thread(target=_start_run, args=(port,), daemon=True).start()
        while _busy_share(agentfn.pid, 0.5) < 0.8:  # the query is looping
            assert time.monotonic() - began < 120, errors.read_text()
        agentfn.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        code = agentfn.wait(30)
        took = time.monotonic() - stopped
    finally:
        agentfn.kill()
    assert code == 0, errors.read_text()
    assert took < SHUTDOWN_GRACE_SECONDS + 8, f"agentfn dev took {took:.1f} s to stop"


def _start_run(port: int) -> None:
    body = json.dumps({"input": "count", "wait_seconds": 1}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/agents/a/runs",
        data=body,
        headers={"content-type": "application/json"},
    )
    with contextlib.suppress(OSError):
        urllib.request.urlopen(request, timeout=60).read()


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
    except OSError:
        return False
    return True
