"""The SSRF guard for HTTP tools: a model chooses URLs and arguments, so no request may reach
loopback, private networks or the cloud metadata service unless the spec says so per tool.

The check lives in the network backend: `connect_tcp` resolves the host itself, refuses the
connection if any address is blocked, and connects to the checked IP literal. There is no
window between check and connect for DNS rebinding, and every redirect hop that opens a new
connection is checked again. TLS SNI and the Host header still use the original host name,
because httpcore builds them from the request's origin, not from what `connect_tcp` dials.

Redirects are followed by `send` here, not by httpx: httpx drops only `Authorization` when a
redirect leaves the origin, so a server could bounce an `X-Api-Key` to a host of its choice.
`send` drops every credential header whenever a hop changes scheme, host or port.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import re
import socket
import ssl
from collections.abc import Iterable
from http.cookiejar import CookieJar, DefaultCookiePolicy
from urllib.parse import urlsplit

import httpcore
import httpx

from runtime.tools.base import ToolError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_REDIRECTS = 5

METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_V4_COMPATIBLE = ipaddress.ip_network("::/96")
# What inet_aton might accept: decimal, octal, hex and short dotted forms (`127.1`).
_LEGACY_V4_RE = re.compile(r"^[0-9a-fA-FxX.]+$")
#: Header names that carry credentials by convention (Authorization, Proxy-Authorization,
#: Cookie, X-Api-Key, X-Auth-Token, ...): they never follow a redirect to another origin.
CREDENTIAL_HEADER_RE = re.compile(
    r"auth|cookie|api[-_]?key|token|secret|passw|credential|session|signature", re.I
)


class SsrfBlocked(ToolError):
    """A request was refused by the guard; the message names the host and why, nothing else."""


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries (mapped, NAT64, 6to4, IPv4-compatible)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64 or (ip in _V4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.sixtofour


def blocked_reason(ip: IPAddress) -> str | None:
    """Why `ip` must not be dialled ("a loopback address", ...), or None for a public one."""
    if ip in METADATA:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            reason = blocked_reason(inner)
            if reason is not None:
                return f"{reason} ({inner} embedded in an IPv6 address)"
            if ip.ipv4_mapped is not None or ip in _NAT64:
                return None  # the IPv4 address is what is actually reached
    checks = (
        (ip.is_unspecified, "an unspecified address"),
        (ip.is_loopback, "a loopback address"),
        (ip.is_link_local, "a link-local address"),
        (ip.version == 4 and ip in _CGNAT, "a carrier-grade NAT address"),
        (ip.is_multicast, "a multicast address"),
        (ip.is_private, "a private address"),
        (ip.version == 6 and ip.is_site_local, "a site-local address"),
        (ip.is_reserved, "a reserved address"),
        (not ip.is_global, "a non-public address"),
    )
    return next((reason for hit, reason in checks if hit), None)


def is_blocked(ip: IPAddress) -> bool:
    return blocked_reason(ip) is not None


def parse_ip(host: str) -> IPAddress | None:
    """The address a host string denotes when it is an IP literal in any spelling the OS
    resolver accepts (`[::1]`, `127.1`, `2130706433`, `0x7f.0.0.1`, `0177.0.0.1`), else None."""
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _LEGACY_V4_RE.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _normal_host(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


class Allowlist:
    """Per-tool exemptions: IPs, CIDRs and host names. A cloud metadata address is exempt only
    when listed exactly, never through a wider CIDR or an allowed host name."""

    def __init__(self, entries: Iterable[str] = ()) -> None:
        self.networks: list[IPNetwork] = []
        self.names: set[str] = set()
        for entry in entries:
            text = entry.strip()
            address = parse_ip(text)
            if address is not None:
                self.networks.append(ipaddress.ip_network(address))
                continue
            try:
                self.networks.append(ipaddress.ip_network(text, strict=False))
            except ValueError:
                self.names.add(_normal_host(text))

    def allows(self, host: str, ip: IPAddress) -> bool:
        candidates: list[IPAddress] = [ip]
        if isinstance(ip, ipaddress.IPv6Address) and (inner := _embedded_v4(ip)) is not None:
            candidates.append(inner)
        if any(c in METADATA for c in candidates):
            return any(n.num_addresses == 1 and n[0] in candidates for n in self.networks)
        if _normal_host(host) in self.names:
            return True
        return any(c in n for c in candidates for n in self.networks)


async def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to (tests replace this to avoid real DNS)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def _refusal(host: str, address: IPAddress, reason: str, literal: bool) -> SsrfBlocked:
    hint = "" if address in METADATA else "; list it in allow_private to permit it"
    if literal:
        return SsrfBlocked(f"refused: {host} is {reason}{hint}")
    return SsrfBlocked(f"refused: {host} resolves to {address}, {reason}{hint}")


async def checked_addresses(host: str, port: int, allow: Allowlist) -> list[IPAddress]:
    """Resolve and vet `host`: raise SsrfBlocked if ANY address is blocked and not allowed,
    so a name with one public and one private record cannot be used to reach the latter."""
    literal = parse_ip(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            addresses = await resolve(host, port)
        except (OSError, UnicodeError) as exc:
            raise httpcore.ConnectError(f"could not resolve host {host}") from exc
        if not addresses:
            raise httpcore.ConnectError(f"could not resolve host {host}")
    for address in addresses:
        reason = blocked_reason(address)
        if reason is None or allow.allows(host, address):
            continue
        raise _refusal(host, address, reason, literal is not None)
    return addresses


def _connect_failure(exc: BaseException, target: str) -> str:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return f"connection refused by {target}"
        if isinstance(seen, OSError) and seen.strerror:
            return f"could not connect to {target}: {seen.strerror}"
        seen = seen.__cause__ or seen.__context__
    return f"could not connect to {target}"


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """A network backend that dials only addresses the guard has just checked."""

    def __init__(self, allow: Allowlist, inner: httpcore.AsyncNetworkBackend | None = None):
        self.allow = allow
        self.inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await checked_addresses(host, port, self.allow)
        failure: httpcore.ConnectError | None = None
        named = parse_ip(host) is None
        for address in addresses:
            target = f"{host}:{port} ({address})" if named else f"{address}:{port}"
            try:
                return await self.inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as exc:
                failure = httpcore.ConnectError(_connect_failure(exc, target))
        assert failure is not None  # addresses is never empty
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise SsrfBlocked("refused: unix sockets are not reachable from HTTP tools")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """Loading the CA bundle costs milliseconds; one context serves every client."""
    return httpx.create_ssl_context()


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport (exception mapping, streaming) over a pool using GuardedBackend.
    Never built with a proxy: a proxy would dial on our behalf and defeat the check."""

    def __init__(self, allow: Allowlist) -> None:
        super().__init__(verify=_ssl_context(), trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=_ssl_context(), network_backend=GuardedBackend(allow)
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme not in ("http", "https"):
            raise SsrfBlocked(f"refused: {request.url.scheme}: URLs are not allowed")
        return await super().handle_async_request(request)


def precheck(url: str, allow: Allowlist) -> None:
    """Refuse before building a request: schemes other than http(s) (file:, ftp:, gopher:)
    and blocked IP literals, including spellings httpx itself rejects (`0177.0.0.1`), so
    the model always hears "refused" rather than a parsing error."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError as exc:
        raise ToolError(f"invalid URL {url[:100]!r}: {exc}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise SsrfBlocked(f"refused: only http and https URLs are allowed, got {url[:100]!r}")
    address = parse_ip(host)
    reason = blocked_reason(address) if address is not None else None
    if address is not None and reason is not None and not allow.allows(host, address):
        raise _refusal(host, address, reason, literal=True)


def guarded_client(allow: Allowlist, timeout: float) -> httpx.AsyncClient:
    """An AsyncClient whose every connection (every redirect hop included) is vetted;
    environment proxies and .netrc are ignored (trust_env=False). It follows no redirect
    itself (`send` does) and keeps no cookies: a cookie a server sets is not sent on."""
    return httpx.AsyncClient(
        transport=GuardedTransport(allow),
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
    )


def _port(url: httpx.URL) -> int | None:
    return url.port or {"http": 80, "https": 443}.get(url.scheme)


def same_origin(a: httpx.URL, b: httpx.URL) -> bool:
    """Same scheme, host and (effective) port: an https→http downgrade is another origin."""
    return a.scheme == b.scheme and a.host == b.host and _port(a) == _port(b)


def is_credential_header(name: str) -> bool:
    return CREDENTIAL_HEADER_RE.search(name) is not None


async def send(
    client: httpx.AsyncClient, request: httpx.Request, *, credentials: Iterable[str] = ()
) -> httpx.Response:
    """Send `request`, following up to MAX_REDIRECTS redirects, and return the last response
    unread (streaming; the caller closes it). On a hop to another origin every credential
    header is dropped: the names in `credentials` (headers built from secrets, whatever
    they are called) and every name that looks like one. A dropped header stays dropped
    for the rest of the chain, even back on the first origin. Redirect bodies are not read.
    """
    named = {name.lower() for name in credentials}
    for _hop in range(MAX_REDIRECTS + 1):
        response = await client.send(request, stream=True, follow_redirects=False)
        following = response.next_request
        if following is None:
            return response
        await response.aclose()
        if not same_origin(request.url, following.url):
            for name in list(following.headers):
                if name.lower() in named or is_credential_header(name):
                    del following.headers[name]
        request = following
    raise httpx.TooManyRedirects("Exceeded maximum allowed redirects.", request=request)
