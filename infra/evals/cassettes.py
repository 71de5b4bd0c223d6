"""Record and replay model traffic at the HTTP layer, so the provider adapters run unchanged.

`--record` gives each HTTP model an httpx client whose transport sends the request for real
and keeps the exchange (request and response, secrets redacted); without it the transport
answers from the cassette and never touches the network. A request that is not in the
cassette is a `CassetteMismatch` naming the first differences (a changed system prompt,
a new tool), raised as a non-transient model error so the run fails at once, not retried.

One cassette per case (`evals/cassettes/<eval file>/<case>.json`): a list per repetition of
the exchanges in the order they were made. Replay matches each request to an unused
recorded one of the same model with the same method, URL and body; the clock of a replayed
run starts when the recording did, so a `{date}` in a prompt renders the same.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

from runtime.errors import ModelError

REDACTED = "<redacted>"
_SECRET_HEADERS = {
    "authorization",
    "api-key",
    "x-api-key",
    "x-goog-api-key",
    "cookie",
    "x-amz-security-token",
}
_SECRET_QUERY = {"key", "api_key", "api-key", "token"}
_TRANSFER = {"content-length", "transfer-encoding", "content-encoding", "connection"}


class CassetteMismatch(ModelError):
    """A request the cassette does not hold: what differs from the nearest recorded one."""

    error_code = "CASSETTE_MISMATCH"


def _redact_url(url: str) -> str:
    parts = urlsplit(url)
    query = [(k, REDACTED if k.lower() in _SECRET_QUERY else v) for k, v in parse_qsl(parts.query)]
    return urlunsplit(parts._replace(query=urlencode(query, safe="<>")))


def _body(content: bytes, content_type: str) -> dict[str, Any]:
    """JSON as JSON (readable, diffable), other text as text, bytes as base64."""
    if "json" in content_type:
        try:
            return {"json": json.loads(content)}
        except ValueError:
            pass
    try:
        return {"text": content.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(content).decode("ascii")}


def body_bytes(body: dict[str, Any]) -> bytes:
    if "json" in body:
        return json.dumps(body["json"]).encode("utf-8")
    if "text" in body:
        return str(body["text"]).encode("utf-8")
    return base64.b64decode(body.get("base64", ""))


def differences(recorded: Any, actual: Any, path: str = "", limit: int = 3) -> list[str]:
    """The first `limit` paths where two JSON values differ, each with both sides, short."""
    found: list[str] = []

    def short(value: Any) -> str:
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 80 else text[:77] + "…"

    def walk(a: Any, b: Any, at: str) -> None:
        if len(found) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in list(a) + [k for k in b if k not in a]:
                where = f"{at}.{key}" if at else str(key)
                if key not in b:
                    found.append(f"{where}: recorded {short(a[key])}, now absent")
                elif key not in a:
                    found.append(f"{where}: not recorded, now {short(b[key])}")
                else:
                    walk(a[key], b[key], where)
        elif isinstance(a, list) and isinstance(b, list):
            for index in range(max(len(a), len(b))):
                where = f"{at}[{index}]"
                if index >= len(a):
                    found.append(f"{where}: not recorded, now {short(b[index])}")
                elif index >= len(b):
                    found.append(f"{where}: recorded {short(a[index])}, now absent")
                else:
                    walk(a[index], b[index], where)
        elif a != b:
            found.append(f"{at or '(body)'}: recorded {short(a)}, now {short(b)}")

    walk(recorded, actual, path)
    return found[:limit]


@dataclass
class Cassette:
    """The exchanges of one case: `repetitions[i]` those of its i-th repetition."""

    path: Path
    recording: bool
    recorded_at: float = field(default_factory=time.time)
    repetitions: list[list[dict[str, Any]]] = field(default_factory=list)
    mismatches: dict[int, list[str]] = field(default_factory=dict)  # by repetition
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, path: Path, recording: bool) -> Cassette:
        if recording or not path.exists():
            return cls(path, recording)
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(path, False, float(data["recorded_at"]), list(data["repetitions"]))

    @property
    def exists(self) -> bool:
        return bool(self.repetitions)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "version": 1,
            "recorded_at": self.recorded_at,
            "repetitions": self.repetitions,
        }
        from runtime.secrets import redact

        text = json.dumps(redact(document), indent=2, ensure_ascii=False)
        self.path.write_text(text + "\n", encoding="utf-8")

    def transport(self, model: str, repetition: int) -> httpx.AsyncBaseTransport:
        if self.recording:
            with self._lock:
                while len(self.repetitions) <= repetition:
                    self.repetitions.append([])
            return _Recorder(self, model, self.repetitions[repetition])
        recorded = self.repetitions[repetition % len(self.repetitions)] if self.exists else []
        return Replayer(self, model, recorded, repetition)

    def client(self, model: str, repetition: int) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=self.transport(model, repetition), timeout=600)

    def mismatch(self, message: str, repetition: int) -> CassetteMismatch:
        with self._lock:
            self.mismatches.setdefault(repetition, []).append(message)
        return CassetteMismatch(message, provider="cassette")


def request_record(
    model: str, method: str, url: str, headers: Any, content: bytes
) -> dict[str, Any]:
    """A request as the cassette keeps it: secret headers and query values redacted."""
    kept = {
        str(k): (REDACTED if str(k).lower() in _SECRET_HEADERS else _text(v))
        for k, v in headers.items()
        if str(k).lower() not in _TRANSFER
    }
    content_type = next(
        (str(v) for k, v in headers.items() if str(k).lower() == "content-type"), ""
    )
    return {
        "model": model,
        "method": method,
        "url": _redact_url(url),
        "headers": kept,
        "body": _body(content, content_type or "json"),
    }


def _text(value: Any) -> str:
    """A header value as text (botocore keeps signed ones as bytes)."""
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def keep(
    cassette: Cassette,
    into: list[dict[str, Any]],
    request: dict[str, Any],
    response: dict[str, Any],
    secrets: list[str],
) -> None:
    """Add one exchange, with every secret the request carried redacted wherever it is."""
    from runtime.secrets import redactor

    values = [s.removeprefix("Bearer ") for s in secrets if s] + [s for s in secrets if s]
    hide = redactor().including(values)
    exchange = {"request": request, "response": response}
    redacted = json.loads(hide.redact_text(json.dumps(exchange)))
    with cassette._lock:
        into.append(redacted)


class _Recorder(httpx.AsyncBaseTransport):
    """Sends for real (a fresh connection each time: every engine step has its own event
    loop), then keeps the exchange with the key redacted wherever it appears."""

    def __init__(self, cassette: Cassette, model: str, into: list[dict[str, Any]]):
        self.cassette, self.model, self.into = cassette, model, into

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        content = await request.aread()
        secrets = [v for k, v in request.headers.items() if k.lower() in _SECRET_HEADERS]
        secrets += [v for k, v in request.url.params.items() if k.lower() in _SECRET_QUERY]
        async with httpx.AsyncHTTPTransport() as real:
            response = await real.handle_async_request(request)
            try:
                body = await response.aread()
            finally:
                await response.aclose()
        headers = {k: v for k, v in response.headers.items() if k.lower() not in _TRANSFER}
        asked = request_record(
            self.model, request.method, str(request.url), request.headers, content
        )
        answer = {
            "status": response.status_code,
            "headers": headers,
            "body": _body(body, response.headers.get("content-type", "")),
        }
        keep(self.cassette, self.into, asked, answer, secrets)
        return httpx.Response(response.status_code, headers=headers, content=body)


class Replayer(httpx.AsyncBaseTransport):
    """Answers from the cassette; never opens a connection."""

    def __init__(
        self, cassette: Cassette, model: str, recorded: list[dict[str, Any]], repetition: int
    ):
        self.cassette, self.model, self.repetition = cassette, model, repetition
        self.mine = [e for e in recorded if e["request"]["model"] == model]
        self.used: set[int] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        content = await request.aread()
        now = request_record(self.model, request.method, str(request.url), request.headers, content)
        answer = self.match(now)
        return httpx.Response(
            answer["status"], headers=answer["headers"], content=body_bytes(answer["body"])
        )

    def match(self, now: dict[str, Any]) -> dict[str, Any]:
        """The recorded response to `now`; CassetteMismatch when none was recorded."""
        key = _key(now)
        with self.cassette._lock:
            for index, exchange in enumerate(self.mine):
                if index not in self.used and _key(exchange["request"]) == key:
                    self.used.add(index)
                    return dict(exchange["response"])
            left = [e for i, e in enumerate(self.mine) if i not in self.used]
        raise self.cassette.mismatch(self._explain(now, left), self.repetition)

    def _explain(self, now: dict[str, Any], left: list[dict[str, Any]]) -> str:
        name = self.cassette.path.name
        if not self.cassette.exists:
            return (
                f"no cassette {self.cassette.path}: a real model ({self.model!r}) answers this "
                "case; record it with agentfn eval --record"
            )
        if not self.mine:
            return (
                f"cassette mismatch: {name} holds no exchange of model {self.model!r}; "
                "refresh it with --record"
            )
        if not left:
            return (
                f"cassette mismatch: model {self.model!r} was asked once more than "
                f"{name} recorded ({len(self.mine)} exchanges); refresh it with --record"
            )
        diffs = differences(_shown(left[0]["request"]), _shown(now))
        return (
            f"cassette mismatch: model {self.model!r}'s request differs from the one "
            f"recorded in {name}: " + "; ".join(diffs) + " (refresh it with --record)"
        )


def _path(url: str) -> str:
    """The URL without scheme and host: an endpoint (a region's, a proxy's, a loopback
    fake's) is where a request went, not what it asked."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


#: A time of day in an ISO date-time: a replayed run starts on the recorded day (its clock
#: is shifted, infra.evals.runner), but the seconds a tool like `get_time_date` reports
#: depend on how fast the run went. Matching compares the date and ignores the time.
_TIME_OF_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})T\d{2}:\d{2}:\d{2}(?:\.\d+)?")


def _untimed(body: Any) -> Any:
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    return json.loads(_TIME_OF_DAY.sub(r"\1T<time>", text))


def _key(request: dict[str, Any]) -> tuple[str, str, str]:
    body = json.dumps(_untimed(request["body"]), sort_keys=True)
    return (request["method"], _path(request["url"]), body)


def _shown(request: dict[str, Any]) -> dict[str, Any]:
    path = _path(request["url"])
    return {"method": request["method"], "path": path, "body": _untimed(request["body"])}


class ShiftedClock:
    """The system clock, started at the cassette's recording time (a replayed `{date}`)."""

    def __init__(self, start: float):
        self._offset = start - time.time()

    def now(self) -> float:
        return time.time() + self._offset

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        import asyncio

        await asyncio.sleep(seconds)
