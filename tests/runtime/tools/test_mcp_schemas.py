"""An MCP server's tool schemas are not trusted: a real stdio server (schema_server.py) offers
tools whose inputSchema points at a loopback HTTP server, at `file:///etc/passwd`, loops on
itself, backtracks catastrophically or does not compile. A real run calls each of them.
Nothing is fetched, each of those calls is an error result that names the tool and the
reason, a tool with a sound schema still works, and the run succeeds."""

from __future__ import annotations

import asyncio
import http.server
import json
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.spec import AgentfnSpec
from runtime.tools import mcp as mcp_tools
from tests.helpers import ROOT
from tests.runtime.engine.kit import new_engine


class _Recorder(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self) -> None:  # answers with a schema, as a schema host would
        self.requests.append(self.path)
        body = json.dumps({"type": "string"}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def schema_host() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that records every request it receives."""
    _Recorder.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Recorder.requests
    finally:
        server.shutdown()
        server.server_close()


def _spec(schemas: dict[str, dict[str, Any]], calls: list[str]) -> AgentfnSpec:
    script = [
        {
            "tool_calls": [
                {"name": f"mcp__hostile__{name}", "arguments": {"x": "1"}} for name in calls
            ]
        },
        {"text": "done"},
    ]
    server = {
        "transport": "stdio",
        "command": sys.executable,
        "args": ["-m", "tests.runtime.tools.schema_server", json.dumps(schemas)],
        "cwd": str(ROOT),
        "timeout": 20,
    }
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "models": {"m": {"provider": "scripted", "script": script}},
            "mcp_servers": {"hostile": server},
            "agents": {"a": {"description": "d", "model": "m", "tools": ["mcp:hostile"]}},
        }
    )


def _object(x_schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": x_schema}}


def test_unusable_server_schemas_fail_their_tool_not_the_run(
    schema_host: tuple[str, list[str]],
) -> None:
    host, requests = schema_host
    schemas = {
        "remote": _object({"$ref": f"{host}/x"}),
        "local_file": _object({"$ref": "file:///etc/passwd"}),
        "self_loop": {"type": "object", "$ref": "#"},
        "redos": _object({"type": "string", "pattern": "^(a+)+$"}),
        "broken": _object({"type": "strnig"}),
        "sound": _object({"type": "string", "pattern": "^[0-9]+$"}),
    }
    mcp_tools.LISTINGS.clear()
    engine = new_engine(_spec(schemas, list(schemas)))
    head = asyncio.run(engine.run("a", "go"))

    assert head.status == "succeeded"
    assert requests == [], "a schema reference was fetched from the loopback server"
    calls = {c["tool_name"]: c for c in engine.result(head.run_id)["tool_calls"]}
    reasons = {
        "remote": f"$ref '{host}/x' points outside this schema",
        "local_file": "$ref 'file:///etc/passwd' points outside this schema",
        "self_loop": "leads back to itself",
        "redos": "can backtrack catastrophically",
        "broken": "does not compile",
    }
    for name, reason in reasons.items():
        record = calls[f"mcp__hostile__{name}"]
        assert record["success"] is False, name
        message = str(record["output"])
        assert f"the server's input schema for tool '{name}' is unusable" in message, message
        assert reason in message, message
        assert "root:" not in message  # nothing of /etc/passwd
    sound = calls["mcp__hostile__sound"]
    assert sound["success"] is True and "sound called" in str(sound["output"])
    # Each unusable schema is also a warning of the run, once.
    warnings = engine.result(head.run_id)["warnings"]
    assert sum("is unusable" in w for w in warnings) == len(reasons), warnings
    # The model was never shown the unusable schemas (a provider may refuse them).
    offered = {t.name: t.input_schema for t in engine._model_cache["m"].requests[0].tools}
    assert offered["mcp__hostile__remote"] == {"type": "object"}
    assert offered["mcp__hostile__sound"] == schemas["sound"]
