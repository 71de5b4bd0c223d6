#!/usr/bin/env python3
"""The project's own bootstrap: `python3 scripts/dev.py demo|test|shell`.

Why a script and not "activate a venv first": the README promises two commands that work
on a fresh machine with only Python 3.11+ and pip. This file creates the virtual
environments it needs, installs (or refreshes, when pyproject.toml changed) the project and
its test tools, then runs the demo or the test suite. It uses only the standard library.

Two environments, on purpose:
- `.venv`          the project, its dependencies and the test tools (pytest, moto, cfn-lint).
- `.tools/sam`     the AWS SAM CLI, which pins many libraries of its own; isolating it keeps
                   those pins from ever constraining the project's dependencies.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
SAM_VENV = ROOT / ".tools" / "sam"
SAM_REQUIREMENT = "aws-sam-cli>=1.120"


def _bin(env: Path, name: str) -> Path:
    scripts = "Scripts" if os.name == "nt" else "bin"
    return env / scripts / name


def _say(message: str) -> None:
    print(f"[dev] {message}", flush=True)


def _ensure_env(env: Path, requirements: list[str], stamp_source: str) -> None:
    """Create `env` if missing and (re)install when what it should hold has changed."""
    stamp = env / ".agentfn-stamp"
    digest = hashlib.sha256((stamp_source + "\n".join(requirements)).encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest and _bin(env, "python").exists():
        return
    if not _bin(env, "python").exists():
        _say(f"creating virtual environment {env.relative_to(ROOT)}")
        venv.EnvBuilder(with_pip=True, clear=True).create(env)
    _say(f"installing into {env.relative_to(ROOT)}: {' '.join(requirements)}")
    subprocess.run(
        [
            str(_bin(env, "python")),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            *requirements,
        ],
        check=True,
        cwd=ROOT,
    )
    stamp.write_text(digest)


def ensure_project() -> None:
    import tomllib  # after the version check in main(): Python 3.11+

    # Reinstall only when what gets installed changes, not on every pyproject edit.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = json.dumps(
        [project["dependencies"], project["optional-dependencies"], project["scripts"]]
    )
    _ensure_env(VENV, ["-e", ".[dev]"], wanted)


def ensure_sam() -> None:
    _ensure_env(SAM_VENV, [SAM_REQUIREMENT], "")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["AGENTFN_SAM"] = str(_bin(SAM_VENV, "sam"))
    env["PATH"] = os.pathsep.join([str(_bin(VENV, "")), env.get("PATH", "")])
    # Never let a developer's real AWS profile leak into the embedded (moto) defaults.
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    return env


def run_tests(extra: list[str]) -> int:
    ensure_project()
    ensure_sam()
    args = [str(_bin(VENV, "python")), "-m", "pytest", "-n", "2", *extra]
    _say("running: " + " ".join(args[2:]))
    return subprocess.run(args, cwd=ROOT, env=_env()).returncode


def run_demo(extra: list[str]) -> int:
    ensure_project()
    agentfn = str(_bin(VENV, "agentfn"))
    steps = [
        [agentfn, "validate"],
        [agentfn, "build", "--check"],
        # Tools, then a structured (JSON) answer validated against the agent's output_schema.
        [agentfn, "run", "support", "My order ORD-1001 arrived damaged. What can you do?", *extra],
        # A clarification: the agent asks which order; --reply answers without a prompt.
        [agentfn, "run", "triage", "Where is my order?", "--reply", "ORD-1002", *extra],
        # A real MCP server shipped in the repo (tools/mcp_servers), started over stdio.
        [agentfn, "run", "shipping", "Where is my parcel for ORD-1002?", *extra],
    ]
    for step in steps:
        _say("$ agentfn " + " ".join(step[1:]))
        code = subprocess.run(step, cwd=ROOT, env=_env()).returncode
        if code != 0:
            return code
    return 0


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):  # noqa: UP036 - this script runs before any venv exists
        print(
            "agentfn needs Python 3.11 or newer; run this script with python3.11.", file=sys.stderr
        )
        return 2
    if not argv or argv[0] not in {"demo", "test", "setup"}:
        print("usage: python3 scripts/dev.py demo|test [pytest args…]|setup", file=sys.stderr)
        return 2
    command, extra = argv[0], argv[1:]
    if command == "test":
        return run_tests(extra)
    if command == "demo":
        return run_demo(extra)
    ensure_project()
    ensure_sam()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
