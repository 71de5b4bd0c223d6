"""`type: http` tools and the opt-in `http_request` builtin.

Both go through the SSRF guard (runtime.tools.ssrf) on every connection, send the run and
call id as `Idempotency-Key` so a retried call can be deduplicated by the server, and return a
RichOutput: compact text for the model, the parsed body in `full` for the output cache.
Secret header values are resolved at call time and redacted, in every spelling (raw, JSON-
or URL-escaped, ...; see runtime.redaction), from anything a model could read (outputs and
error messages), in case a server or an exception echoes them back. Headers built from
secrets are never sent on to another origin by a redirect (runtime.tools.ssrf.send).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple
from urllib.parse import quote

import httpx

from runtime.redaction import Redactor, redactor_for
from runtime.spec.plain import HttpTool
from runtime.spec.shared import SECRET_REF_RE, URL_PARAM_RE
from runtime.tools.base import FunctionTool, RichOutput, ToolContext, ToolError
from runtime.tools.ssrf import MAX_REDIRECTS, Allowlist, guarded_client, precheck, send

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_CHARS = 10_000
#: Bytes of a response body read at most: the cache keeps `full`, so it must stay bounded.
MAX_RESPONSE_BYTES = 5 * 1024 * 1024
USER_AGENT = "agentfn"
_QUERY_BY_DEFAULT = {"GET", "HEAD", "DELETE"}
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]


def _path_value(value: Any) -> str:
    encoded = quote(str(value), safe="")
    # "." and ".." would be dot segments that httpx normalises away (path traversal).
    return encoded.replace(".", "%2E") if set(encoded) <= {"."} else encoded


def fill_url(template: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The URL with `{param}` placeholders filled (each value URL-encoded) and the arguments
    that were not used by it."""
    rest = dict(arguments)
    names = set(URL_PARAM_RE.findall(template))
    missing = sorted(n for n in names if arguments.get(n) is None)
    if missing:
        raise ToolError(f"missing URL argument(s): {', '.join(missing)}")
    url = URL_PARAM_RE.sub(lambda m: _path_value(arguments[m.group(1)]), template)
    for name in names:
        rest.pop(name, None)
    return url.replace("{{", "{").replace("}}", "}"), rest


def _query_value(value: Any) -> str | list[str]:
    if isinstance(value, list):
        return [v if isinstance(v, str) else json.dumps(v) for v in value]
    return value if isinstance(value, str) else json.dumps(value)


class ResolvedHeaders(NamedTuple):
    headers: dict[str, str]
    #: The secret values sent, to redact from whatever comes back.
    secrets: list[str]
    #: Names of the headers built from a secret, never sent on to another origin.
    credentials: list[str]


def resolve_headers(templates: dict[str, str], secrets: Callable[[str], str]) -> ResolvedHeaders:
    """Headers with `${secret:NAME}` resolved, the secret values used and the headers that
    hold them."""
    used: list[str] = []

    def one(match: Any) -> str:
        value = secrets(match.group(0))
        if value:
            used.append(value)
        return value

    resolved = {name: SECRET_REF_RE.sub(one, value) for name, value in templates.items()}
    credentials = [name for name, value in templates.items() if SECRET_REF_RE.search(value)]
    return ResolvedHeaders(resolved, sorted(set(used)), credentials)


def _failure(exc: Exception, method: str, url: str, timeout: float) -> str:
    where = f"{method} {url.split('?', 1)[0]}"
    if isinstance(exc, httpx.TimeoutException):
        return f"{where} timed out after {timeout:g}s ({type(exc).__name__})"
    if isinstance(exc, httpx.TooManyRedirects):
        return f"{where}: more than {MAX_REDIRECTS} redirects"
    if isinstance(exc, httpx.ConnectError):
        return f"{where}: {exc}"
    return f"{where} failed: {type(exc).__name__}: {exc}"


async def _read_capped(response: httpx.Response) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            return b"".join(chunks)[:MAX_RESPONSE_BYTES], True
    return b"".join(chunks), False


def _output(response: httpx.Response, data: bytes, cut: bool, redactor: Redactor) -> RichOutput:
    content_type = response.headers.get("content-type", "")
    try:
        text = data.decode(response.encoding or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name
        text = data.decode("utf-8", errors="replace")
    body: Any = text
    if "json" in content_type.lower() and text.strip() and not cut:
        try:
            body = json.loads(text)
            text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        except ValueError:
            pass
    if cut:
        text += f"\n[response cut at {MAX_RESPONSE_BYTES} bytes]"
    status = response.status_code
    if status >= 400:
        text = f"HTTP {status}: {text or response.reason_phrase}"
    elif not text:
        text = f"HTTP {status} {response.reason_phrase} (empty body)"
    full = {
        "status": status,
        "headers": {"content-type": content_type} if content_type else {},
        "body": body,
    }
    return RichOutput(
        text=redactor.redact_text(text), full=redactor.redact(full), is_error=status >= 400
    )


async def perform(
    method: str,
    url: str,
    *,
    headers: dict[str, str],
    ctx: ToolContext,
    allow: Allowlist,
    timeout: float,
    secrets: Iterable[str] = (),
    credentials: Iterable[str] = (),
    **body: Any,
) -> RichOutput:
    """Send one guarded request (`body`: httpx's params=, json= or content=) and shape the
    response; network failures become ToolErrors. `secrets` (values) are redacted from both;
    `credentials` (header names) are dropped on a redirect to another origin, as are headers
    whose names look like credentials."""
    precheck(url, allow)
    redactor = redactor_for(secrets)
    all_headers = httpx.Headers(headers)
    all_headers["Idempotency-Key"] = ctx.idempotency_key  # the run and the call: never reused
    all_headers["User-Agent"] = USER_AGENT
    try:
        async with guarded_client(allow, timeout) as client:
            request = client.build_request(method, url, headers=all_headers, **body)
            response = await send(client, request, credentials=credentials)
            try:
                data, cut = await _read_capped(response)
            finally:
                await response.aclose()
    except ToolError:
        raise  # SsrfBlocked: its message names only the host and the reason
    except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as exc:
        raise ToolError(redactor.redact_text(_failure(exc, method, url, timeout))) from None
    return _output(response, data, cut, redactor)


def _default_schema(config: HttpTool) -> dict[str, Any]:
    names = list(dict.fromkeys(config.url_params()))
    return {
        "type": "object",
        "properties": {name: {"type": "string"} for name in names},
        "required": names,
    }


def http_tool(name: str, config: HttpTool, secrets: Callable[[str], str]) -> FunctionTool:
    """A tool calling one configured endpoint; arguments fill the URL, then the query string
    or a JSON body."""
    allow = Allowlist(config.allow_private)
    timeout = config.timeout or DEFAULT_TIMEOUT
    args_in = config.args_in or ("query" if config.method in _QUERY_BY_DEFAULT else "body")

    async def invoke(arguments: dict[str, Any], ctx: ToolContext) -> RichOutput:
        url, rest = fill_url(config.url, arguments)
        headers = resolve_headers(config.headers, secrets)
        body: dict[str, Any] = {}
        if args_in == "body":
            body = {"json": rest}
        elif params := {k: _query_value(v) for k, v in rest.items() if v is not None}:
            # Merged by hand: httpx's params= replaces a query string the template fixes.
            url = str(httpx.URL(url).copy_merge_params(params))
        return await perform(
            config.method,
            url,
            headers=headers.headers,
            ctx=ctx,
            allow=allow,
            timeout=timeout,
            secrets=headers.secrets,
            credentials=headers.credentials,
            **body,
        )

    return FunctionTool(
        name=name,
        description=config.description,
        input_schema=config.input_schema or _default_schema(config),
        func=invoke,
        effect=config.effect,
        timeout=config.timeout,
        max_chars=config.max_chars or DEFAULT_MAX_CHARS,
        destructive=False,
        cache_outputs=True,
        reuse_cached=False,
    )


HTTP_REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "description": "Absolute http(s) URL."},
        "method": {"type": "string", "enum": METHODS, "default": "GET"},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "body": {
            "description": "A JSON value (sent as JSON) or a string (sent as is; as JSON when "
            "it is a JSON object or array and no Content-Type header is given)."
        },
    },
    "required": ["url"],
    "additionalProperties": False,
}


def _json_text(text: str) -> bool:
    """Is `text` a JSON object or array (what an API's JSON body is)?"""
    if not text.lstrip().startswith(("{", "[")):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def http_request_tool(allow_private: list[str] | None = None) -> FunctionTool:
    """The `http_request` builtin: any public URL, any method, so its effect is at_most_once."""
    allow = Allowlist(allow_private or [])

    async def invoke(arguments: dict[str, Any], ctx: ToolContext) -> RichOutput:
        body = arguments.get("body")
        headers = {str(k): str(v) for k, v in (arguments.get("headers") or {}).items()}
        payload: dict[str, Any] = {}
        if isinstance(body, str):
            payload = {"content": body}
            if _json_text(body) and not any(k.lower() == "content-type" for k in headers):
                # Models often write a JSON body as a string: it is still JSON (seed 004).
                headers["Content-Type"] = "application/json"
        elif body is not None:
            payload = {"json": body}
        return await perform(
            str(arguments.get("method") or "GET").upper(),
            str(arguments["url"]),
            headers=headers,
            ctx=ctx,
            allow=allow,
            timeout=DEFAULT_TIMEOUT,
            **payload,
        )

    return FunctionTool(
        name="http_request",
        description=(
            "Send an HTTP request to a public http(s) URL and return the response body "
            "(JSON re-serialised compactly; 4xx/5xx responses are reported as errors). "
            "Private, loopback and cloud metadata addresses are refused."
        ),
        input_schema=HTTP_REQUEST_SCHEMA,
        func=invoke,
        effect="at_most_once",
        max_chars=DEFAULT_MAX_CHARS,
        cache_outputs=True,
    )
