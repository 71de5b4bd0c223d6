"""SIGTERM to `agentfn run` or `agentfn dev` stops every stdio MCP server it started.

A stdio server runs in a session of its own (the SDK starts it so, to stop its whole process
tree), so a signal sent to agentfn never reaches it. The server here is busy in a blocking
tool call when agentfn is told to stop: an abrupt exit of agentfn would close its stdin and
leave it running, an orphan, until the work is done. Both commands run as real processes
with a real stdio server; after SIGTERM no process of that server may remain.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import ROOT


def _spec(tmp_path: Path, tag: str) -> Path:
    """An agent whose model calls the lab server's `work` tool for a minute."""
    spec = {
        "version": 1,
        "models": {
            "m": {
                "provider": "scripted",
                "script": [
                    {"tool_calls": [{"name": "mcp__lab__work", "arguments": {"seconds": 60}}]},
                    {"text": "done"},
                ],
            }
        },
        "defaults": {"tool_timeout": "2m"},
        "mcp_servers": {
            "lab": {
                "transport": "stdio",
                "command": sys.executable,
                "args": ["-m", "tests.runtime.tools.lab_server", "--tag", tag],
                "cwd": str(ROOT),
                "env": {"LAB_PIDFILE": str(tmp_path / "pids")},
            }
        },
        "agents": {"a": {"description": "d", "model": "m", "tools": ["mcp:lab"]}},
    }
    path = tmp_path / "agents.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _servers(tag: str) -> list[int]:
    """Live processes (not zombies) whose command line carries `tag`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if tag in cmdline and "lab_server" in cmdline and state != "Z":
            found.append(int(entry))
    return found


def _wait_for(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _stop_and_check(agentfn: subprocess.Popen[Any], tag: str, pids: Path) -> int:
    """SIGTERM agentfn once its server is busy; no server process may outlive it."""
    try:
        _wait_for(lambda: pids.exists() and pids.read_text().strip(), 60, "the tool call")
        assert _servers(tag), "the stdio server is not running"
        agentfn.send_signal(signal.SIGTERM)
        code = agentfn.wait(30)
        # The SDK's stop: close stdin, 2 s grace, SIGTERM to the process group, SIGKILL.
        time.sleep(0.5)
        assert _servers(tag) == [], "a stdio MCP server outlived agentfn"
        return code
    finally:
        agentfn.kill()
        for pid in _servers(tag):  # never leave one behind, even when the test fails
            os.kill(pid, signal.SIGKILL)


def test_sigterm_to_agentfn_run_stops_its_stdio_servers_and_cancels_the_run(
    tmp_path: Path,
) -> None:
    tag = uuid.uuid4().hex
    spec = _spec(tmp_path, tag)
    agentfn = subprocess.Popen(
        [sys.executable, "-m", "infra.cli", "run", "a", "go", "-f", str(spec)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    code = _stop_and_check(agentfn, tag, tmp_path / "pids")
    _, err = agentfn.communicate(timeout=10)
    assert code == 128 + signal.SIGTERM, err
    assert "stopped by SIGTERM" in err


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_sigterm_to_agentfn_dev_stops_the_stdio_servers_of_runs_in_flight(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    spec = _spec(tmp_path, tag)
    port, aws_port = _free_port(), _free_port()
    args = ["dev", "-f", str(spec), "--port", str(port), "--aws-port", str(aws_port)]
    agentfn = subprocess.Popen(
        [sys.executable, "-m", "infra.cli", *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )

    def start_run() -> None:  # answered only when the run ends; the server is gone by then
        body = json.dumps({"input": "go", "wait_seconds": 25}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/agents/a/runs",
            data=body,
            headers={"content-type": "application/json"},
        )
        with contextlib.suppress(OSError):
            urllib.request.urlopen(request, timeout=60).read()

    try:
        _wait_for(lambda: _listening(port) or agentfn.poll() is not None, 60, "agentfn dev")
        assert agentfn.poll() is None, "agentfn dev exited at start-up"
        threading.Thread(target=start_run, daemon=True).start()
    except BaseException:
        agentfn.kill()
        raise
    code = _stop_and_check(agentfn, tag, tmp_path / "pids")
    assert code == 0


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
    except OSError:
        return False
    return True
