"""The SSRF guard: every spelling of a blocked address is refused, names are checked on
every resolved address, redirects are re-checked, and the connection goes to the address
that was checked. Nothing here needs the network (literals need no DNS; names are faked)."""

from __future__ import annotations

import asyncio
import ipaddress
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from runtime.tools import ssrf
from runtime.tools.base import ToolContext, ToolError
from runtime.tools.http_tool import http_request_tool
from runtime.tools.ssrf import Allowlist, SsrfBlocked, guarded_client, is_blocked, parse_ip
from tests.runtime.tools.local_http import LocalServer, install_fake_dns, serve

CTX = ToolContext("run-1", "sess-1", "agent", "call-1")


@pytest.fixture(autouse=True)
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_dns(monkeypatch)


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with serve() as running:
        yield running


@pytest.fixture
def other_server() -> Iterator[LocalServer]:
    with serve() as running:
        yield running


BLOCKED_HOSTS = [
    "127.0.0.1",
    "127.1",
    "2130706433",
    "0177.0.0.1",
    "0x7f000001",
    "0x7f.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "100.64.0.1",
    "100.100.100.200",
    "169.254.169.254",
    "0.0.0.0",
    "[::]",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:169.254.169.254]",
    "[fd00:ec2::254]",
    "[fe80::1]",
    "[fc00::1]",
    "[64:ff9b::7f00:1]",
    "[2002:7f00:1::]",
    "[ff02::1]",
    "224.0.0.1",
    "240.0.0.1",
]


def request(url: str, allow: list[str] | None = None, **arguments: Any) -> Any:
    tool = http_request_tool(allow_private=allow)
    return asyncio.run(tool.call({"url": url, **arguments}, CTX))


@pytest.mark.parametrize("host", BLOCKED_HOSTS)
def test_every_spelling_of_a_blocked_address_is_refused(host: str) -> None:
    address = parse_ip(host)
    assert address is not None and is_blocked(address)
    with pytest.raises(SsrfBlocked, match="refused"):
        request(f"http://{host}/latest/meta-data/")


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("[::ffff:127.0.0.1]", "::ffff:127.0.0.1"),
        ("example.com", None),
        ("cafe", None),
        ("127.0.0.1 evil", None),
    ],
)
def test_ip_literals_are_recognised_in_legacy_spellings(host: str, expected: str | None) -> None:
    assert parse_ip(host) == (ipaddress.ip_address(expected) if expected else None)


@pytest.mark.parametrize(
    "address",
    ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:93.184.216.34", "64:ff9b::5db8:d822"],
)
def test_public_addresses_are_not_blocked(address: str) -> None:
    assert not is_blocked(ipaddress.ip_address(address))


def test_the_reason_names_the_host_and_the_kind_of_address() -> None:
    with pytest.raises(SsrfBlocked) as caught:
        request("http://10.0.0.5/")
    assert "10.0.0.5 is a private address" in str(caught.value)
    with pytest.raises(SsrfBlocked) as caught:
        request("http://[::ffff:169.254.169.254]/")
    assert "cloud metadata" in str(caught.value)


def test_a_name_resolving_to_any_blocked_address_is_refused() -> None:
    with pytest.raises(SsrfBlocked) as caught:
        request("http://rebind.test/")
    assert str(caught.value).startswith(
        "refused: rebind.test resolves to 10.0.0.1, a private address"
    )
    with pytest.raises(SsrfBlocked, match=re.escape("metadata.test resolves to 169.254.169.254")):
        request("http://metadata.test/")
    with pytest.raises(
        SsrfBlocked, match=re.escape("localhost.test resolves to 127.0.0.1, a loopback")
    ):
        request("http://localhost.test/")


def test_an_unresolvable_name_is_a_clear_tool_error() -> None:
    with pytest.raises(ToolError, match=re.escape("could not resolve host nowhere.test")):
        request("http://nowhere.test/")


def test_the_allowlist_matches_ips_cidrs_and_names() -> None:
    allow = Allowlist(["127.0.0.1", "10.0.0.0/8", "crm.internal", "[::1]"])
    loopback = ipaddress.ip_address("127.0.0.1")
    assert allow.allows("anything", loopback)
    assert allow.allows("x", ipaddress.ip_address("::ffff:127.0.0.1"))  # the embedded IPv4
    assert allow.allows("x", ipaddress.ip_address("10.9.8.7"))
    assert allow.allows("x", ipaddress.ip_address("::1"))
    assert not allow.allows("x", ipaddress.ip_address("127.0.0.2"))
    assert not allow.allows("x", ipaddress.ip_address("192.168.0.1"))
    assert allow.allows("CRM.internal.", ipaddress.ip_address("192.168.0.1"))


def test_metadata_addresses_need_an_exact_allowlist_entry() -> None:
    metadata = ipaddress.ip_address("169.254.169.254")
    assert not Allowlist(["169.254.0.0/16"]).allows("x", metadata)
    assert not Allowlist(["meta.internal"]).allows("meta.internal", metadata)
    assert Allowlist(["169.254.169.254"]).allows("x", metadata)


def test_without_the_allowlist_nothing_reaches_the_loopback_server(server: LocalServer) -> None:
    with pytest.raises(SsrfBlocked, match=re.escape("127.0.0.1 is a loopback address")):
        request(f"{server.url}/json")
    assert server.requests == []


def test_the_connection_goes_to_the_validated_ip_with_the_original_host(
    server: LocalServer,
) -> None:
    output = request(f"http://svc.test:{server.port}/json", allow=["127.0.0.1"])
    assert output.full["status"] == 200
    [seen] = server.requests
    assert seen.headers["host"] == f"svc.test:{server.port}"


def test_an_allowed_host_name_exempts_its_addresses(server: LocalServer) -> None:
    output = request(f"http://svc.test:{server.port}/json", allow=["svc.test"])
    assert output.full["body"]["path"] == "/json"


def test_a_redirect_to_the_metadata_service_is_refused(server: LocalServer) -> None:
    target = "http://169.254.169.254/latest/meta-data/"
    with pytest.raises(SsrfBlocked, match=re.escape("169.254.169.254 is a cloud metadata address")):
        request(f"{server.url}/redirect?to={target}", allow=["127.0.0.1"])
    assert [r.path for r in server.requests] == ["/redirect"]  # the first hop was allowed


def test_a_redirect_to_another_loopback_port_is_allowed_when_allowlisted(
    server: LocalServer, other_server: LocalServer
) -> None:
    output = request(f"{server.url}/redirect?to={other_server.url}/json", allow=["127.0.0.1"])
    assert output.full["body"]["path"] == "/json"
    assert len(other_server.requests) == 1


def test_a_redirect_to_a_loopback_address_not_allowlisted_is_refused(
    server: LocalServer, other_server: LocalServer
) -> None:
    start = f"http://svc.test:{server.port}/redirect?to={other_server.url}/json"
    with pytest.raises(SsrfBlocked, match=re.escape("127.0.0.1 is a loopback address")):
        request(start, allow=["svc.test"])
    assert len(server.requests) == 1
    assert other_server.requests == []
    output = request(start, allow=["svc.test", "127.0.0.1"])
    assert output.full["status"] == 200
    assert len(other_server.requests) == 1


def test_redirects_are_capped(server: LocalServer) -> None:
    with pytest.raises(ToolError, match="more than 5 redirects"):
        request(f"{server.url}/loop", allow=["127.0.0.1"])
    assert len(server.requests) == 6


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://x/", "gopher://x/", "x"])
def test_non_http_schemes_are_refused(url: str) -> None:
    with pytest.raises(SsrfBlocked, match="only http and https"):
        request(url)


@pytest.mark.parametrize("target", ["file:///etc/passwd", "gopher://127.0.0.1:70/x"])
def test_a_redirect_to_a_non_http_scheme_is_not_followed(server: LocalServer, target: str) -> None:
    scheme = target.split(":")[0]
    with pytest.raises(SsrfBlocked, match=f"refused: {scheme}: URLs are not allowed"):
        request(f"{server.url}/redirect?to={target}", allow=["127.0.0.1"])


def test_a_malformed_url_is_a_tool_error() -> None:
    with pytest.raises(ToolError, match="invalid URL"):
        request("http://[::1/")


def test_the_guarded_client_applies_the_timeout_and_ignores_the_environment() -> None:
    client = guarded_client(Allowlist([]), 3.5)
    assert client.timeout == httpx.Timeout(3.5)
    assert not client.follow_redirects  # ssrf.send follows them, dropping credentials
    assert client.trust_env is False
    # a cookie a server sets is never kept, so no later hop can carry it to another port
    request = httpx.Request("GET", "http://127.0.0.1:8001/")
    client.cookies.extract_cookies(
        httpx.Response(302, headers={"Set-Cookie": "sid=1"}, request=request)
    )
    assert not client.cookies
    asyncio.run(client.aclose())


def test_the_real_resolver_uses_getaddrinfo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # the autouse fake is gone; numeric hosts still need no DNS
    addresses = asyncio.run(ssrf.resolve("127.0.0.1", 80))
    assert addresses == [ipaddress.ip_address("127.0.0.1")]
