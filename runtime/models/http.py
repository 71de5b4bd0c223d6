"""What the HTTP model providers share: the POST with its error mapping, and the lazy key.

Every HTTP provider (OpenAI-compatible, Anthropic, Gemini) fails the same way: transport
errors are transient, HTTP errors are classified by `error_for_status`, an echoed API key is
redacted from every message in every spelling (a raw error body shows it JSON-escaped), and
so is any other secret the process has resolved.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Generic, TypeVar

import httpx

from runtime import secrets as resolved_secrets
from runtime.errors import ModelError, TransientModelError
from runtime.models.base import SecretResolver
from runtime.models.failures import classify_http
from runtime.models.streaming import SseEvent, sse_events, stream_failure

Config = TypeVar("Config")


class HttpModel(Generic[Config]):
    """A provider speaking HTTP with an API key from a secret reference."""

    def __init__(
        self,
        name: str,
        config: Config,
        secrets: SecretResolver,
        client: httpx.AsyncClient | None = None,
    ):
        self.name = name
        self.model_id: str = config.model_id  # type: ignore[attr-defined]
        self._config = config
        self._secrets = secrets
        self._client = client
        self._key: str | None = None

    def _api_key(self) -> str | None:
        """Resolved on first use, so a fallback that never runs never reads its secret."""
        reference = getattr(self._config, "api_key", None)
        if self._key is None and reference:
            self._key = self._secrets(reference)
        return self._key


def scrub(text: str, secret: str | None) -> str:
    """`text` with the key and every resolved secret redacted, for servers that echo a bad
    key back. The key is named too: a test or caller may resolve it without the process's
    SecretResolver."""
    return resolved_secrets.redactor().including([secret] if secret else []).redact_text(text)


def _json_body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def error_message(response: httpx.Response, secret: str | None = None) -> str:
    """The human part of an error body: `{"error": {"message", "type"|"status"}}` in all the
    providers' dialects (Gemini sometimes wraps it in a list), else the raw text, redacted
    before it is cut so no piece of a key survives at the cut. OpenRouter's upstream cause
    (`error.metadata.raw`) is kept: its own message is only "Provider returned error"."""
    body = _json_body(response)
    if isinstance(body, list) and body:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, str):
        return scrub(error, secret)
    if isinstance(error, dict):
        message = str(error.get("message") or "")
        kind = error.get("type") or error.get("status") or error.get("code")
        text = f"{kind}: {message}" if kind and message else message or str(kind or "")
        metadata = error.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("raw"), str):
            text = f"{text} ({metadata['raw'][:300]})"
        return scrub(text, secret)
    return scrub(response.text, secret)[:500] or response.reason_phrase


#: Hosts of a server on this machine: refusing a connection, it is most likely not running.
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


def _unreachable(
    provider: str, exc: Exception, secret: str | None, url: str
) -> TransientModelError:
    """A transport failure, naming the server it could not reach (its origin only: a query
    string may carry a key) and, for a server on this machine, what to check."""
    cause = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        where = httpx.URL(url)
        origin = f"{where.scheme}://{where.netloc.decode()}"
        text = f"{provider} request failed: cannot connect to {origin} ({cause})"
        if where.host in _LOCAL_HOSTS:
            running = "`ollama serve`" if provider == "ollama" else "the server"
            text += f"; is {running} running there? (the model's `base_url` in agents.yaml)"
    else:
        text = f"{provider} request failed: {cause}"
    return TransientModelError(scrub(text, secret), provider=provider)


async def post_json(
    client: httpx.AsyncClient | None,
    provider: str,
    url: str,
    *,
    headers: dict[str, str],
    body: dict[str, Any],
    timeout: float,
    secret: str | None = None,
) -> dict[str, Any]:
    """POST `body` and return the JSON answer; every failure becomes a ModelError (transient
    when retrying can help), with `secret` scrubbed from its text."""
    try:
        if client is None:
            async with httpx.AsyncClient(timeout=timeout) as own:
                response = await own.post(url, json=body, headers=headers, timeout=timeout)
        else:
            response = await client.post(url, json=body, headers=headers, timeout=timeout)
    except httpx.TransportError as exc:
        raise _unreachable(provider, exc, secret, url) from exc
    if not response.is_success:
        raise _refused(provider, response, secret)
    return _json_object(provider, response, secret)


def _refused(provider: str, response: httpx.Response, secret: str | None) -> ModelError:
    """The error of a non-2xx answer (read whole), classified by its status and body."""
    message = error_message(response, secret)
    return classify_http(
        provider, response.status_code, message, response.headers, _json_body(response)
    )


def _json_object(provider: str, response: httpx.Response, secret: str | None) -> dict[str, Any]:
    """A 2xx answer's JSON object (read whole); anything else is a ModelError saying what."""
    status = response.status_code
    try:
        answer = response.json()
    except ValueError:
        snippet = scrub(response.text, secret)[:200]
        raise ModelError(
            f"{provider} answered HTTP {status} with invalid JSON: {snippet!r}",
            status=status,
            provider=provider,
        ) from None
    if not isinstance(answer, dict):
        raise ModelError(
            f"{provider} answered with a JSON {type(answer).__name__}, not an object",
            provider=provider,
        )
    return answer


async def post_stream(
    client: httpx.AsyncClient | None,
    provider: str,
    url: str,
    *,
    headers: dict[str, str],
    body: dict[str, Any],
    timeout: float,
    secret: str | None = None,
) -> AsyncIterator[SseEvent | dict[str, Any]]:
    """POST `body` and yield its server-sent events as they arrive — or, from a server that
    answered one JSON document instead, that document (once). Failures map as post_json's;
    a stream cut off midway is transient."""
    own = client is None
    http = client or httpx.AsyncClient(timeout=timeout)
    headers = {**headers, "Accept": "text/event-stream"}
    try:
        try:
            request = http.build_request("POST", url, json=body, headers=headers, timeout=timeout)
            response = await http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise _unreachable(provider, exc, secret, url) from exc
        try:
            if not response.is_success:
                await response.aread()
                raise _refused(provider, response, secret)
            if "text/event-stream" not in response.headers.get("content-type", ""):
                await response.aread()  # one JSON document instead of a stream
                yield _json_object(provider, response, secret)
                return
            try:
                async for event in sse_events(response.aiter_lines()):
                    yield event
            except (httpx.TransportError, httpx.StreamError) as exc:
                raise stream_failure(provider, exc) from exc
        finally:
            await response.aclose()
    finally:
        if own:
            await http.aclose()
