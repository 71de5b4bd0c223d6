"""The API Gateway side of `agentfn dev`: which route a request takes and the REST API
proxy-integration event the handler receives, as the deployed stage builds them.

Its own module so the server (infra.local.dev_server) and the event stream
(infra.local.dev_stream) both build events without importing each other.
"""

from __future__ import annotations

import base64
import re
import time
import uuid
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from infra.local.dev_aws import HOST
from runtime.routes import ROUTES, Route

STAGE = "dev"


def _compile(route: Route) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(route.path)))


_PATTERNS = [(route, _compile(route)) for route in ROUTES]


def match_route(method: str, path: str) -> tuple[Route | None, dict[str, str]]:
    """The route API Gateway would pick and its decoded path parameters; (None, {}) when no
    route matches (the handler answers those: 404)."""
    for route, pattern in _PATTERNS:
        found = pattern.fullmatch(path.rstrip("/") or "/")
        if found is not None and route.method == method:
            return route, {k: unquote(v) for k, v in found.groupdict().items()}
    return None, {}


def _multi(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    return {key: [v for k, v in pairs if k == key] for key, _ in pairs}


def _text(body: bytes) -> tuple[str | None, bool]:
    """The body as API Gateway passes it: text, or base64 when it is not UTF-8."""
    if not body:
        return None, False
    try:
        return body.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), True


def proxy_event(
    method: str, target: str, headers: list[tuple[str, str]], body: bytes, **client: str
) -> dict[str, Any]:
    """An API Gateway REST API proxy-integration event, as the deployed stage sends it.
    `client`: source_ip and host (the Host header) when known."""
    parts = urlsplit(target)
    path = unquote(parts.path) or "/"
    route, params = match_route(method, parts.path or "/")
    resource = route.path if route else "/{proxy+}"
    multi_query = _multi(parse_qsl(parts.query, keep_blank_values=True))
    multi_headers = _multi(headers)
    text, encoded = _text(body)
    agent = next((v for k, v in headers if k.lower() == "user-agent"), "")
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": {name: values[-1] for name, values in multi_headers.items()} or None,
        "multiValueHeaders": multi_headers or None,
        "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": (params or None) if route else {"proxy": path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "agentfn-dev",
            "resourcePath": resource,
            "httpMethod": method,
            "path": f"/{STAGE}{path}",
            "stage": STAGE,
            "protocol": "HTTP/1.1",
            "domainName": client.get("host", HOST),
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {"sourceIp": client.get("source_ip", HOST), "userAgent": agent},
        },
        "body": text,
        "isBase64Encoded": encoded,
    }
