"""The client command the MCP conformance suite runs: agentfn's own MCP client, driven like a run.

The suite starts a scenario server and runs `python tests/conformance/client.py URL` with
`MCP_CONFORMANCE_SCENARIO` (and, for OAuth scenarios, `MCP_CONFORMANCE_CONTEXT`) set. This
adapter builds the `mcp_servers` entry a spec author would write for that server, opens it
with `McpToolset` (the class the engine uses), discovers the tools and calls each one with
arguments made from its input schema, as a model would. Exit 0 when every tool was listed
and called without a ToolError; 1 otherwise (the scenario's checks say what the server saw).

For `auth/client-credentials-basic` the adapter stands in for the operator who configures
`oauth.token_url`: it reads the token endpoint from the scenario's metadata (RFC 9728, then
RFC 8414). agentfn itself never sends a client secret where a server's metadata points.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from runtime.spec.tools import HttpMcpServer  # noqa: E402
from runtime.tools.base import ToolContext, ToolError  # noqa: E402
from runtime.tools.mcp import McpToolset  # noqa: E402

SECRET = "${secret:conformance}"
CALL_TIMEOUT = 20.0


def sample(schema: Any) -> Any:
    """A value that satisfies a simple JSON Schema (what the scenarios' tools ask for)."""
    if not isinstance(schema, dict):
        return "x"
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        required = schema.get("required", [])
        props = schema.get("properties", {})
        return {k: sample(v) for k, v in props.items() if k in required}
    return {"number": 1, "integer": 1, "boolean": True, "array": [], "null": None}.get(kind, "x")


def token_endpoint(url: str) -> str:
    """The token endpoint the scenario's authorization server advertises."""
    import httpx

    with httpx.Client(timeout=10) as http:
        challenge = http.post(url, json={}).headers.get("www-authenticate", "")
        marker = 'resource_metadata="'
        prm_url = challenge.split(marker, 1)[1].split('"', 1)[0]
        issuer = http.get(prm_url).json()["authorization_servers"][0].rstrip("/")
        metadata = http.get(f"{issuer}/.well-known/oauth-authorization-server").json()
        return str(metadata["token_endpoint"])


def server_config(scenario: str, url: str) -> tuple[Any, dict[str, str]]:
    """The `mcp_servers` entry for the scenario's server, validated as `agentfn build` does
    and in the form the run time reads (runtime.spec.plain), and the secrets it references."""
    config: dict[str, Any] = {"transport": "http", "url": url, "timeout": "20s"}
    secrets: dict[str, str] = {}
    if scenario == "auth/client-credentials-basic":
        context = json.loads(os.environ["MCP_CONFORMANCE_CONTEXT"])
        config["oauth"] = {
            "token_url": token_endpoint(url),
            "client_id": context["client_id"],
            "client_secret": SECRET,
        }
        secrets[SECRET] = context["client_secret"]
    return HttpMcpServer.model_validate(config).to_runtime(), secrets


async def main(scenario: str, url: str) -> int:
    config, secrets = server_config(scenario, url)
    ok = True
    async with McpToolset(
        {"conformance": config}, ["mcp:conformance"], lambda text: secrets.get(text, text)
    ) as toolset:
        tools, failures = await toolset.discover()
        for failure in failures:
            print(f"unavailable: {failure.error}", file=sys.stderr)
            ok = False
        for number, tool in enumerate(tools.values()):
            ctx = ToolContext(run_id="conformance", session_id="s", agent="a", call_id=str(number))
            try:
                async with asyncio.timeout(CALL_TIMEOUT):
                    output = await tool.call(sample(tool.input_schema), ctx)
            except (ToolError, TimeoutError) as exc:
                print(f"{tool.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
                ok = False
                continue
            state = "error" if output.is_error else "ok"
            print(f"{tool.name}: {state}: {output.text[:300]}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(os.environ["MCP_CONFORMANCE_SCENARIO"], sys.argv[-1])))
