"""The official MCP conformance suite's client scenarios, run against agentfn's MCP client.

`scripts/dev.py test` installs `@modelcontextprotocol/conformance` (pinned in
tests/conformance/package-lock.json) into `.tools/conformance` and passes its entry point and
node here (AGENTFN_CONFORMANCE, AGENTFN_NODE). The suite starts each scenario's server on
loopback and runs tests/conformance/client.py against it. Every client scenario of the
suite either passes or is out of scope for a serverless agent, with the reason (docs/spec.md
lists those reasons too); the passing ones run here, two at a time, in a few seconds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT

INSTALLED = ROOT / ".tools/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"

PASSING = {
    "initialize": "clientInfo agentfn and its version, protocol 2025-11-25",
    "tools_call": "tools/list and tools/call over streamable HTTP",
    "sse-retry": "a closed SSE stream is resumed after `retry` with Last-Event-ID",
    "auth/client-credentials-basic": "oauth: client credentials with client_secret_basic",
    "auth/resource-mismatch": "agentfn never follows server metadata into an authorization",
}
_INTERACTIVE = "interactive (browser) OAuth: an authorization-code flow"
OUT_OF_SCOPE = {
    "elicitation-sep1034-client-defaults": (
        "expects the client to accept a form with its defaults; agentfn never answers for a "
        "person during a tool call: it declines and tells the model"
    ),
    "auth/metadata-default": _INTERACTIVE,
    "auth/metadata-var1": _INTERACTIVE,
    "auth/metadata-var2": _INTERACTIVE,
    "auth/metadata-var3": _INTERACTIVE,
    "auth/basic-cimd": _INTERACTIVE,
    "auth/scope-from-www-authenticate": _INTERACTIVE,
    "auth/scope-from-scopes-supported": _INTERACTIVE,
    "auth/scope-omitted-when-undefined": _INTERACTIVE,
    "auth/scope-step-up": _INTERACTIVE,
    "auth/scope-retry-limit": _INTERACTIVE,
    "auth/token-endpoint-auth-basic": _INTERACTIVE,
    "auth/token-endpoint-auth-post": _INTERACTIVE,
    "auth/token-endpoint-auth-none": _INTERACTIVE,
    "auth/pre-registration": _INTERACTIVE,
    "auth/2025-03-26-oauth-metadata-backcompat": _INTERACTIVE,
    "auth/2025-03-26-oauth-endpoint-fallback": _INTERACTIVE,
    "auth/client-credentials-jwt": "private_key_jwt client authentication is not supported",
}


def _suite() -> tuple[str, str]:
    """The node and the suite's entry point, or a skip when the suite was never installed
    (pytest run by hand; `scripts/dev.py test` always installs it and says where)."""
    entry = os.environ.get("AGENTFN_CONFORMANCE")
    if entry is not None:  # set by scripts/dev.py test: it must be there
        assert Path(entry).is_file(), f"AGENTFN_CONFORMANCE points to a missing file: {entry}"
        return os.environ.get("AGENTFN_NODE", "node"), entry
    node = shutil.which("node")
    if not INSTALLED.is_file() or node is None:
        pytest.skip("the MCP conformance suite is installed by `python3 scripts/dev.py test`")
    return node, str(INSTALLED)


def _listed(node: str, entry: str) -> set[str]:
    """The client scenarios this version of the suite has (`conformance list`)."""
    listing = subprocess.run(
        [node, entry, "list"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    section = listing.split("Client scenarios", 1)[1]
    return set(re.findall(r"^\s+- (\S+)$", section, flags=re.M))


def _run(node: str, entry: str, scenario: str, out: Path) -> tuple[str, list[dict[str, Any]]]:
    """One scenario: the suite's server, our client against it; its output and its checks."""
    command = f"{sys.executable} {ROOT / 'tests/conformance/client.py'}"
    args = [node, entry, "client", "--command", command, "--scenario", scenario]
    finished = subprocess.run(
        [*args, "--timeout", "60000", "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    (checks,) = out.rglob("checks.json")
    return finished.stdout + finished.stderr, json.loads(checks.read_text())


def _problems(checks: list[dict[str, Any]]) -> list[str]:
    """Failed checks, and warnings other than "reconnected slightly late" (within the SSE
    retry tolerance, which a busy CI machine may exceed by a few milliseconds)."""
    bad = [
        c
        for c in checks
        if c["status"] == "FAILURE"
        or (c["status"] == "WARNING" and c["id"] != "client-sse-retry-timing")
    ]
    if not any(c["status"] == "SUCCESS" for c in checks):
        return ["no check succeeded"]
    return [f"{c['id']}: {c.get('errorMessage') or c['description']}" for c in bad]


def test_every_conformance_client_scenario_passes_or_is_out_of_scope(tmp_path: Path) -> None:
    node, entry = _suite()
    assert _listed(node, entry) == set(PASSING) | set(OUT_OF_SCOPE), (
        "the suite's client scenarios changed: classify each (PASSING or OUT_OF_SCOPE)"
    )
    # Two at a time: each is a node server plus a Python client, on a 2-core machine.
    with ThreadPoolExecutor(2) as pool:
        runs = {
            name: pool.submit(_run, node, entry, name, tmp_path / str(number))
            for number, name in enumerate(PASSING)
        }
    outcomes = {name: run.result() for name, run in runs.items()}
    failed = {name: _problems(checks) for name, (_, checks) in outcomes.items()}
    failed = {name: problems for name, problems in failed.items() if problems}
    assert failed == {}, "\n\n".join(outcomes[name][0][-3000:] for name in failed)


def test_every_out_of_scope_scenario_is_named_in_the_docs_with_its_reason() -> None:
    docs = (ROOT / "docs/spec.md").read_text(encoding="utf-8")
    missing = [name for name in OUT_OF_SCOPE if f"`{name}`" not in docs]
    assert missing == []
    assert "private_key_jwt" in docs and "interactive" in docs.lower()
