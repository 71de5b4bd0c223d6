"""Credentials never follow a redirect to another origin: real loopback servers on two ports
(and two host names for one port) show what each hop receives. httpx alone drops only
`Authorization`; every header built from a secret and every credential-named header must go,
while plain headers still arrive and a same-origin redirect keeps everything."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from runtime.spec.tools import HttpTool
from runtime.tools import ssrf
from runtime.tools.base import RichOutput, ToolContext
from runtime.tools.http_tool import http_request_tool, http_tool
from tests.runtime.tools.local_http import LocalServer, install_fake_dns, serve

CTX = ToolContext("run-1", "sess-1", "agent", "call-1")
TOKEN = "tok-123456"
TENANT = "tenant-secret-42"
#: What the secret-bearing headers are called: a credential name and an innocent one.
SECRET_HEADERS = {
    "X-Api-Key": "${secret:tok}",
    "Authorization": "Bearer ${secret:tok}",
    "Cookie": "sid=${secret:tok}",
    "X-Tenant": "${secret:tenant}",  # not a credential name: dropped because of its value
}
CREDENTIALS = ["x-api-key", "authorization", "cookie", "x-tenant"]


def secrets(text: str) -> str:
    return text.replace("${secret:tok}", TOKEN).replace("${secret:tenant}", TENANT)


@pytest.fixture(autouse=True)
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_dns(monkeypatch)


@pytest.fixture
def first() -> Iterator[LocalServer]:
    with serve() as running:
        yield running


@pytest.fixture
def second() -> Iterator[LocalServer]:
    with serve() as running:
        yield running


def redirect(server: LocalServer, to: str, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{server.port}/redirect?to={quote(to, safe='')}"


def http(url: str) -> RichOutput:
    config = HttpTool.model_validate(
        {
            "type": "http",
            "description": "test tool",
            "url": url,
            "headers": {**SECRET_HEADERS, "X-Plain": "visible"},
            "allow_private": ["127.0.0.1"],
        }
    )
    output = asyncio.run(http_tool("crm", config, secrets).call({}, CTX))
    assert isinstance(output, RichOutput)
    return output


def test_a_redirect_to_another_port_drops_every_header_built_from_a_secret(
    first: LocalServer, second: LocalServer
) -> None:
    output = http(redirect(first, f"{second.url}/echo-headers"))
    assert output.full["status"] == 200
    [sent] = first.requests
    assert sent.headers["x-api-key"] == TOKEN and sent.headers["x-tenant"] == TENANT
    [received] = second.requests
    assert received.path == "/echo-headers"
    assert [name for name in CREDENTIALS if name in received.headers] == []
    assert TOKEN not in json.dumps(received.headers) and TENANT not in json.dumps(received.headers)
    assert received.headers["x-plain"] == "visible"
    assert received.headers["idempotency-key"] == "run-1:call-1"


def test_a_dropped_credential_stays_dropped_when_the_chain_comes_back(
    first: LocalServer, second: LocalServer
) -> None:
    back = redirect(second, f"{first.url}/echo-headers")
    http(redirect(first, back))
    start, final = first.requests
    assert start.headers["x-api-key"] == TOKEN
    assert final.path == "/echo-headers"
    assert [name for name in CREDENTIALS if name in final.headers] == []
    assert final.headers["x-plain"] == "visible"


def test_a_same_origin_redirect_keeps_every_header(first: LocalServer) -> None:
    http(redirect(first, "/echo-headers"))
    start, final = first.requests
    assert final.path == "/echo-headers"
    # httpx never resends a Cookie header on a redirect (its cookie jar would supply one)
    for name in ["x-api-key", "authorization", "x-tenant", "x-plain"]:
        assert final.headers[name] == start.headers[name]
    assert start.headers["cookie"] == f"sid={TOKEN}"


def test_http_request_drops_credential_named_headers_for_another_host_name(
    first: LocalServer,
) -> None:
    """Same server and port, another host name (svc.test resolves to 127.0.0.1)."""
    tool = http_request_tool(allow_private=["127.0.0.1"])
    headers = {
        "X-Auth-Token": TOKEN,
        "Proxy-Authorization": "Basic " + TOKEN,
        "X-Api-Key": TOKEN,
        "Cookie": "sid=" + TOKEN,
        "X-Plain": "visible",
    }
    url = redirect(first, f"http://svc.test:{first.port}/echo-headers")
    asyncio.run(tool.call({"url": url, "headers": headers}, CTX))
    start, final = first.requests
    assert start.headers["x-auth-token"] == TOKEN
    assert final.headers["host"] == f"svc.test:{first.port}"
    assert TOKEN not in json.dumps(final.headers)
    assert final.headers["x-plain"] == "visible"


def test_an_https_to_http_downgrade_on_the_same_host_drops_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No TLS server here: the guarded transport is swapped for an in-memory one that
    answers https://svc.test/ with a redirect to http://svc.test/ (same host, no TLS)."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.scheme == "https":
            return httpx.Response(302, headers={"Location": "http://svc.test/landing"})
        return httpx.Response(200, json={"ok": True})

    monkeypatch.setattr(ssrf, "GuardedTransport", lambda allow: httpx.MockTransport(answer))
    output = http("https://svc.test/start")
    assert output.full["body"] == {"ok": True}
    start, landing = seen
    assert start.headers["x-api-key"] == TOKEN
    assert str(landing.url) == "http://svc.test/landing"
    assert [name for name in CREDENTIALS if name in landing.headers] == []
    assert landing.headers["x-plain"] == "visible"


@pytest.mark.parametrize(
    ("start", "target", "kept"),
    [
        ("http://a.test/x", "http://a.test:80/y", True),  # the default port, spelt out
        ("https://a.test/x", "https://a.test/y", True),
        ("https://a.test/x", "http://a.test/y", False),  # downgrade
        ("http://a.test/x", "https://a.test/y", False),  # another scheme all the same
        ("http://a.test/x", "http://a.test:8080/y", False),
        ("http://a.test/x", "http://b.test/y", False),
    ],
)
def test_origin_is_scheme_host_and_port(start: str, target: str, kept: bool) -> None:
    assert ssrf.same_origin(httpx.URL(start), httpx.URL(target)) is kept


def test_credential_names_are_recognised() -> None:
    names: dict[str, Any] = {
        "Authorization": True,
        "Proxy-Authorization": True,
        "Cookie": True,
        "X-Api-Key": True,
        "api_key": True,
        "X-Auth-Token": True,
        "X-Client-Secret": True,
        "X-Password": True,
        "Content-Type": False,
        "Idempotency-Key": False,
        "X-Plain": False,
    }
    assert {name: ssrf.is_credential_header(name) for name in names} == names
