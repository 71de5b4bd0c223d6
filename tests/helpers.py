"""Test helpers: the repository's paths, the reference specs, the real CLI and tools."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from infra.checks.validate import validate_file
from runtime.spec import AgentfnSpec

ROOT = Path(__file__).resolve().parent.parent
DEMO_SPEC = ROOT / "agents.yaml"
FULL_SPEC = ROOT / "tests" / "fixtures" / "full" / "agents.yaml"


def load_spec(path: Path) -> AgentfnSpec:
    result = validate_file(path)
    assert result.ok, "\n".join(str(i) for i in result.issues)
    assert result.spec is not None
    return result.spec


def run_agentfn(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess, as a user would. Without `env`, in this process's
    environment, with a local state of its own (`agentfn run` keeps one: a fresh directory
    per call, so runs of the repo's spec leave nothing in the repository); with `env`, in
    exactly that environment (the caller decides where the local state lives)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="agentfn-state-") as state:
        if env is None:
            env = {"AGENTFN_STATE_DIR": state, **os.environ}
        return subprocess.run(
            [sys.executable, "-m", "infra.cli", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            env={**env, "PYTHONPATH": str(ROOT)},
            timeout=120,
        )


def tool_path(name: str) -> str:
    """An external tool the test command installs (sam and checkov in their own venvs under
    .tools, cfn-lint in .venv).

    Missing tools fail the test: the README's test command installs them, so a missing one
    is a broken set-up, not a reason to skip.
    """
    own_env = {"sam": "AGENTFN_SAM", "checkov": "AGENTFN_CHECKOV"}  # scripts/dev.py sets them
    if name in own_env and os.environ.get(own_env[name]):
        return os.environ[own_env[name]]
    tools = ROOT / ".tools"
    for candidate in (
        Path(sys.executable).parent / name,
        tools / "sam" / "bin" / name,
        tools / name / "bin" / name,
    ):
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed; run the tests with: python3 scripts/dev.py test")
    return found


def wait_for(check: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll `check` until it returns something truthy (returned), or fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
