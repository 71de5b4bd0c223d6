"""Work abandoned past its timeout neither burns a core nor keeps `agentfn run` alive.

A real `agentfn run` (a subprocess) on a project whose scripted model sends a recursive CTE
that never ends to `database_query` (tool timeout 2 s), then answers; a sync Python
`pre_response` hook sleeps 60 s past its 3 s timeout. While the hook sleeps, the process's
CPU time is sampled: the interrupted statement must not be running any more (before the
fix its thread burned a core for as long as the process lived). Then the process must
exit on its own, promptly: the sleeping hook's thread must not hold it up (before the fix
the process never exited: the SQLite thread never ended).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import yaml

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


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


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
        before = _cpu_seconds(agentfn.pid)
        time.sleep(2.0)
        burned = _cpu_seconds(agentfn.pid) - before
        assert burned < 0.5, f"the process burned {burned:.2f} s of CPU in 2 s: still querying"
        hook_began = time.monotonic()
        out, err = agentfn.communicate(timeout=30)
        exited_after = time.monotonic() - hook_began
    finally:
        agentfn.kill()
    assert "timed out after 2s" in out + err or "stopped after 2s" in out + err, err
    assert "done" in out, (out, err)
    # the hook's timeout (3 s, ~2.3 s of it already waited) and the end of the run
    assert exited_after < 6, f"agentfn run exited {exited_after:.1f} s after the hook began"
