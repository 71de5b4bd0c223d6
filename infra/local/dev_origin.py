"""Who may talk to `agentfn dev`: the rules that keep a web page from driving it.

Listening on loopback keeps other machines out, not the browser on this one: any page may
send requests to 127.0.0.1, and a page whose name it re-points at 127.0.0.1 (DNS
rebinding) is, for the browser, the same origin as the server, so it may read the answers
too. Both ports of `agentfn dev` (the API, infra.local.dev_server; the AWS endpoint,
infra.local.dev_aws) therefore check every request before anything else reads it:

- **Host** must be a loopback name (`localhost`, `*.localhost`) or address (127.0.0.0/8,
  `::1`), or a name allowed with `--allow-host NAME` / `AGENTFN_DEV_ALLOW_HOSTS` (a
  container's service name): a rebound page sends its own name and is refused (403).
- **Origin**, when sent, must be the server's own (`http://` + the Host): the console is
  served from the same port, so it keeps working; any other page gets 403, on every route.
  `Sec-Fetch-Site: cross-site` or `same-site` (another port) is refused the same way, except
  a plain GET navigation (a link to the console).
- **State-changing requests** (POST, PUT, PATCH, DELETE) must say `Content-Type:
  application/json` (415 otherwise): a page can send that header only after a CORS preflight,
  and none is ever granted (no `Access-Control-Allow-*` header is ever sent).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

ALLOW_HOSTS_ENV = "AGENTFN_DEV_ALLOW_HOSTS"
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
JSON = "application/json"

Header = Callable[[str], str | None]  # a request header by name (any case), None if absent


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: its status, error code, the header at fault, a message."""

    status: int
    error_code: str
    field: str
    message: str


def allowed_hosts(
    names: Iterable[str] = (), environ: dict[str, str] | None = None
) -> frozenset[str]:
    """The non-loopback Host names to accept: `names` (`--allow-host`) and the
    comma-separated AGENTFN_DEV_ALLOW_HOSTS, lowercased, without a port."""
    env = os.environ if environ is None else environ
    listed = [*names, *env.get(ALLOW_HOSTS_ENV, "").split(",")]
    return frozenset(n for n in (_bare(name.strip()) for name in listed) if n)


def _bare(host: str) -> str:
    """The name or address of a Host value, lowercased, without port, brackets or final dot."""
    host = host.strip().lower()
    if host.startswith("["):  # [::1]:8321
        return host[1 : host.find("]")] if "]" in host else ""
    if host.count(":") == 1:
        host = host.rsplit(":", 1)[0]
    return host.rstrip(".")


def is_local_host(host: str | None, allowed: frozenset[str] = frozenset()) -> bool:
    """True when a request with this Host header may be answered: a loopback name or
    address, or one of `allowed`."""
    name = _bare(host or "")
    if not name:
        return False
    if name in allowed or name == "localhost" or name.endswith(".localhost"):
        return True  # *.localhost always resolves to loopback (RFC 6761; browsers hard-wire it)
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_refusal(header: Header, allowed: frozenset[str]) -> Refusal | None:
    host = header("Host")
    if is_local_host(host, allowed):
        return None
    message = (
        f"Host {host!r} is not a loopback name or address: agentfn dev answers requests made "
        "to 127.0.0.1 or localhost (allow another name with --allow-host NAME or "
        f"{ALLOW_HOSTS_ENV})"
        if host
        else "send a Host header (127.0.0.1:PORT or localhost:PORT)"
    )
    return Refusal(403, "FORBIDDEN_HOST", "Host", message)


def origin_refusal(method: str, header: Header) -> Refusal | None:
    """A request sent by a page of another origin (Origin, or the browser's fetch metadata)."""
    origin = header("Origin")
    own = f"http://{(header('Host') or '').lower()}"
    if origin is not None and origin.lower() != own:
        message = (
            f"Origin {origin!r} is not this server's ({own}): agentfn dev answers no other "
            "web page (use the console it serves, curl or the CLI)"
        )
        return Refusal(403, "FORBIDDEN_ORIGIN", "Origin", message)
    site = (header("Sec-Fetch-Site") or "").lower()
    navigation = method in {"GET", "HEAD"} and (header("Sec-Fetch-Mode") or "") == "navigate"
    if site in {"cross-site", "same-site"} and not navigation:
        message = f"a request from another site (Sec-Fetch-Site: {site}) is refused"
        return Refusal(403, "FORBIDDEN_ORIGIN", "Sec-Fetch-Site", message)
    return None


def media_refusal(method: str, header: Header) -> Refusal | None:
    """A state-changing request that does not say it sends JSON."""
    if method not in STATE_CHANGING:
        return None
    kind = header("Content-Type")
    if kind is not None and kind.split(";", 1)[0].strip().lower() == JSON:
        return None
    said = f"this one says {kind!r}" if kind else "this one sends none"
    message = (
        f"send Content-Type: {JSON} with a {method} ({said}; with curl: "
        f"-H 'content-type: {JSON}'); the body, if any, must be JSON"
    )
    return Refusal(415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type", message)


def api_refusal(method: str, header: Header, allowed: frozenset[str]) -> Refusal | None:
    """The first rule the API port's request breaks, or None: it may be answered."""
    return (
        host_refusal(header, allowed)
        or origin_refusal(method, header)
        or media_refusal(method, header)
    )
