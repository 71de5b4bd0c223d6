"""OAuth 2 client credentials and HTTP refusals, against a real token endpoint and a real MCP
server on loopback that checks every bearer token (oauth_server.py). No mocks: the server
counts the token requests and tells which token each call carried."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.secrets import redact
from runtime.spec import plain
from runtime.spec.tools import HttpMcpServer
from runtime.tools.base import ToolContext, ToolError
from runtime.tools.mcp import LISTINGS, McpFailure, McpToolset
from runtime.tools.mcp.auth import forget_tokens
from tests.helpers import ROOT
from tests.runtime.tools.test_mcp import free_port

CTX = ToolContext(run_id="run-1", session_id="sess-1", agent="a", call_id="call-1")
SECRETS = {"${secret:lab-client}": "s3cret", "${secret:wrong}": "guess"}


def secrets(text: str) -> str:
    return SECRETS.get(text, text)


@pytest.fixture(autouse=True)
def fresh_caches() -> Iterator[None]:
    forget_tokens()
    LISTINGS.clear()
    yield
    forget_tokens()
    LISTINGS.clear()


@pytest.fixture
def guarded() -> Iterator[str]:
    """The server's base URL; a fresh process per test (tokens, counters, refusals)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.runtime.tools.oauth_server", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                stats(base)
                break
            except OSError:
                assert proc.poll() is None, "the OAuth test server exited at start-up"
                assert time.monotonic() < deadline, "the OAuth test server did not listen"
                time.sleep(0.05)
        yield base
    finally:
        proc.kill()
        proc.wait(5)


def stats(base: str, action: str = "stats") -> dict[str, Any]:
    method = "GET" if action == "stats" else "POST"
    request = urllib.request.Request(f"{base}/admin/{action}", method=method)
    with urllib.request.urlopen(request, timeout=5) as answer:
        result: dict[str, Any] = json.loads(answer.read())
        return result


def server(base: str, **oauth: Any) -> plain.HttpMcpServer:
    settings = {
        "token_url": f"{base}/token",
        "client_id": "agent-1",
        "client_secret": "${secret:lab-client}",
        "scopes": ["tools:read"],
        **oauth,
    }
    return HttpMcpServer.model_validate(
        {"transport": "http", "url": f"{base}/mcp", "timeout": "10s", "oauth": settings}
    ).to_runtime()


async def whoami(config: HttpMcpServer, clock: Any = time.time) -> tuple[Any, list[McpFailure]]:
    """Discover and call `whoami` in a toolset of its own (one run advance)."""
    async with McpToolset({"guarded": config}, ["mcp:guarded"], secrets, clock) as toolset:
        tools, failures = await toolset.discover()
        if failures:
            return None, failures
        output = await tools["mcp__guarded__whoami"].call({}, CTX)
        return output.full["structuredContent"], failures


def test_a_client_credentials_token_is_checked_by_the_server_and_reused_by_later_runs(
    guarded: str,
) -> None:
    config = server(guarded)
    first, failures = asyncio.run(whoami(config))
    assert failures == []
    assert first == {"token": "tok-1", "scopes": ["tools:read"]}
    second, _ = asyncio.run(whoami(config))  # a later run in the same warm container
    assert second == first
    seen = stats(guarded)
    assert seen["token_requests"] == 1
    assert seen["last"] == {
        "grant_type": "client_credentials",
        "resource": f"{guarded}/mcp",  # RFC 8707, as the MCP authorization spec asks
        "scope": "tools:read",
        "auth": "client_secret_basic",
    }
    assert redact("the token is tok-1") == "the token is [redacted]"  # remembered, like a secret


def test_client_secret_post_sends_the_credentials_in_the_form(guarded: str) -> None:
    found, failures = asyncio.run(whoami(server(guarded, auth_method="client_secret_post")))
    assert failures == [] and found["token"] == "tok-1"
    assert stats(guarded)["last"]["auth"] == "client_secret_post"


def test_a_token_the_server_rejects_is_replaced_once_and_the_call_retried(guarded: str) -> None:
    config = server(guarded)
    assert asyncio.run(whoami(config))[0]["token"] == "tok-1"
    stats(guarded, "revoke")  # the server forgets every token (restarted, or revoked)
    found, failures = asyncio.run(whoami(config))
    assert failures == [] and found["token"] == "tok-2"
    assert stats(guarded)["token_requests"] == 2


def test_a_token_is_renewed_before_it_expires(guarded: str) -> None:
    now = [time.time()]
    config = server(guarded)
    assert asyncio.run(whoami(config, lambda: now[0]))[0]["token"] == "tok-1"
    now[0] += 3600 - 59  # inside the last minute (the server would still accept tok-1)
    assert asyncio.run(whoami(config, lambda: now[0]))[0]["token"] == "tok-2"
    assert stats(guarded)["token_requests"] == 2


def test_a_refused_client_secret_names_the_server_and_the_token_endpoints_answer(
    guarded: str,
) -> None:
    config = server(guarded, client_secret="${secret:wrong}")
    _, failures = asyncio.run(whoami(config))
    assert failures == [
        McpFailure(
            "guarded",
            "the token endpoint refused the client credentials: HTTP 401 invalid_client "
            "(bad client)",
        )
    ]


def test_401_and_403_are_authentication_errors_with_status_and_challenge(guarded: str) -> None:
    static = HttpMcpServer.model_validate(
        {"transport": "http", "url": f"{guarded}/mcp", "headers": {"Authorization": "Bearer x"}}
    ).to_runtime()
    _, failures = asyncio.run(whoami(static))
    assert failures == [
        McpFailure(
            "guarded",
            'authentication failed: HTTP 401, WWW-Authenticate: Bearer realm="lab", '
            'error="invalid_token", resource_metadata="http://127.0.0.1/prm"',
        )
    ]
    _, failures = asyncio.run(whoami(server(guarded, scopes=["tools:list"])))
    assert [f.error.split(", WWW")[0] for f in failures] == ["access denied: HTTP 403"]
    assert 'error="insufficient_scope"' in failures[0].error


def test_a_call_whose_token_can_no_longer_be_renewed_fails_with_the_reason(guarded: str) -> None:
    async def scenario() -> str:
        config = server(guarded)
        async with McpToolset({"guarded": config}, ["mcp:guarded"], secrets) as toolset:
            tools, _ = await toolset.discover()
            stats(guarded, "revoke")
            stats(guarded, "refuse")
            with pytest.raises(ToolError) as refused:
                await tools["mcp__guarded__whoami"].call({}, CTX)
            return str(refused.value)

    assert asyncio.run(scenario()) == (
        "MCP server 'guarded': the token endpoint refused the client credentials: HTTP 401 "
        "invalid_client (bad client)"
    )


def test_no_token_request_leaves_the_process_when_oauth_is_not_configured() -> None:
    code = "import runtime.tools.mcp, sys; print('httpx2' in sys.modules, 'mcp' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.stdout.split() == ["False", "False"]  # the SDK stays a lazy import
