"""`agentfn dev` reloads on edits, as a user runs it: a real `agentfn dev` on a project in a
temporary folder, its spec edited on disk while runs wait for a person."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import wait_for
from tests.infra.local.test_dev_server import START_TIMEOUT, _env, _free_port

SPEC = """\
version: 1
models:
  m:
    provider: scripted
    script:
      - tool_calls: [{name: stamp, arguments: {text: hi}}]
      - text: "PROMPT"
agents:
  a:
    description: DESCRIPTION
    model: m
    system_prompt: PROMPT
    tools: [stamp]
    approval: [{tools: [stamp]}]
tools:
  stamp: {type: python, handler: tools.stamp:stamp, description: Stamp a text., effect: read_only}
"""

TOOL = "def stamp(text: str) -> str:\n    return 'stamped ' + text\n"


def _write(project: Path, description: str, prompt: str) -> None:
    text = SPEC.replace("DESCRIPTION", description).replace("PROMPT", prompt)
    (project / "agents.yaml").write_text(text)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("")
    (tmp_path / "tools" / "stamp.py").write_text(TOOL)
    _write(tmp_path, "first", "one")
    return tmp_path


@contextmanager
def _dev(project: Path, *extra: str) -> Iterator[str]:
    port, aws_port = _free_port(), _free_port()
    log = (project / "dev.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "infra.cli", "dev", "--port", str(port), "--aws-port",
         str(aws_port), *extra],
        cwd=project, stdout=log, stderr=subprocess.STDOUT, text=True, env=_env(),
    )  # fmt: skip
    api = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        assert process.poll() is None, (project / "dev.log").read_text()
        try:
            return httpx.get(f"{api}/agents", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(answers, START_TIMEOUT, "agentfn dev to answer")
        yield api
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        log.close()


def _description(api: str) -> str:
    agents = httpx.get(f"{api}/agents", timeout=10).json()["agents"]
    return str(next(a["description"] for a in agents if a["name"] == "a"))


def _start(api: str) -> str:
    answer = httpx.post(f"{api}/agents/a/runs", json={"input": "go"}, timeout=20)
    assert answer.status_code in (200, 202), answer.text
    return str(answer.json()["run_id"])


def _run(api: str, run_id: str) -> dict[str, Any]:
    return dict(httpx.get(f"{api}/runs/{run_id}", timeout=10).json())


def test_an_edit_serves_new_runs_and_runs_in_flight_keep_their_spec(project: Path) -> None:
    with _dev(project) as api:
        waiting = _start(api)
        wait_for(lambda: _run(api, waiting)["status"] == "awaiting_approval", what="a wait")
        _write(project, "second", "two")
        wait_for(lambda: _description(api) == "second", 20, "the edited description")
        # The run that was waiting finishes on the spec it started with.
        approved = httpx.post(f"{api}/runs/{waiting}/approval", json={"approved": True}, timeout=20)
        assert approved.status_code in (200, 202), approved.text
        done = wait_for(
            lambda: (r := _run(api, waiting))["status"] in ("succeeded", "failed") and r,
            what="the first run's end",
        )
        assert done["status"] == "succeeded", done
        assert done["result"] == "one"
        # A new run uses the new spec.
        fresh = _start(api)
        wait_for(lambda: _run(api, fresh)["status"] == "awaiting_approval", what="a wait")
        httpx.post(f"{api}/runs/{fresh}/approval", json={"approved": True}, timeout=20)
        done = wait_for(
            lambda: (r := _run(api, fresh))["status"] in ("succeeded", "failed") and r,
            what="the second run's end",
        )
        assert done["result"] == "two", done


def test_an_invalid_edit_keeps_the_last_good_spec_and_says_why(project: Path) -> None:
    with _dev(project) as api:
        spec = project / "agents.yaml"
        spec.write_text(spec.read_text().replace("    model: m\n", "    model: m\n    modle: m\n"))

        def status() -> dict[str, Any]:
            return dict(httpx.get(f"{api}/dev/status", timeout=10).json())

        found = wait_for(lambda: (s := status())["errors"] and s, 20, "the edit's problems")
        assert any("agents.a.modle: unknown key 'modle'" in line for line in found["errors"])
        assert any(line.startswith("agents.yaml:") for line in found["errors"]), found
        assert _description(api) == "first"  # still served
        assert "kept the last good spec" in (project / "dev.log").read_text()
        _write(project, "fixed", "one")
        wait_for(lambda: not status()["errors"] and _description(api) == "fixed", 20, "a fix")
        assert status()["generation"] == 2
        # A tool that stops importing is kept out the same way, named with its module.
        (project / "tools" / "stamp.py").write_text("import not_installed_here\n" + TOOL)
        _write(project, "broken tool", "one")
        found = wait_for(lambda: (s := status())["errors"] and s, 20, "the import failure")
        assert any("module 'tools.stamp' does not import" in e for e in found["errors"]), found
        assert _description(api) == "fixed" and status()["generation"] == 2


def test_no_reload_serves_the_spec_as_it_was(project: Path) -> None:
    with _dev(project, "--no-reload") as api:
        _write(project, "second", "two")
        time.sleep(2)  # what a watcher, were there one, needs to see it
        assert _description(api) == "first"
        assert httpx.get(f"{api}/dev/status", timeout=10).status_code == 404
