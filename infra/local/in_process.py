"""The process's own requests to its embedded moto server, answered in process (local only).

`agentfn dev` serves everything from one process: its moto server, the Step Functions
interpreter, the API and every agent's function. Their boto3 clients reached the server
over loopback HTTP, so each AWS request paid for an HTTP client (urllib3, http.client), a
connection and a thread on the server, and werkzeug's request parsing, twice over in the
same process and under the same GIL: with 50 team runs at once that was about a quarter of
the server's CPU (bench/dev_teams.py --profile).

Here botocore's HTTP session hands a request for a registered server (by host and port:
`127.0.0.1:PORT`, and `localhost:PORT`, which moto's Step Functions clients use) to that
server's WSGI app directly, with the environ werkzeug's server (moto's request handler)
would have built from the same request, and wraps the answer as the response botocore
would have read. The app is the one the server serves behind its guard — the request log
(infra.local.local_state) included — so a request is persisted exactly as it was over HTTP,
and external clients (the `aws` CLI, SDKs, other processes) still use the HTTP server and
see the same state. The guard (infra.local.dev_aws.guarded) keeps web pages out; requests
from the process itself never came from one.

Threads as before: the server answered each connection in a thread of its own. DynamoDB and
S3 requests never call out (infra.local.dev_concurrency), so they are answered in the
caller's thread; every other service's (a Lambda invoke runs an agent's function, an
EventBridge put may run a target) in a new thread, as the server did, the caller waiting at
most its client's read timeout (then botocore's ReadTimeoutError, as over HTTP).
"""

from __future__ import annotations

import re
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from io import BytesIO
from typing import Any
from urllib.parse import unquote

Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Answer = tuple[int, list[tuple[str, str]], bytes]

#: Services whose requests are answered in the caller's thread (they never call out).
INLINE_SERVICES = frozenset({"dynamodb", "s3"})
_SERVICE = re.compile(r"Credential=[^/]*/[^/]*/[^/]*/([^/]+)/")

_lock = threading.Lock()
_routes: dict[str, tuple[Wsgi, str, int]] = {}  # "host:port" → (app, server host, port)
_original_send: Callable[..., Any] | None = None


def serve_in_process(app: Wsgi, host: str, port: int) -> Callable[[], None]:
    """Answer this process's botocore requests to `host:port` (and `localhost:port`) with
    `app`, until the returned function is called."""
    netlocs = {f"{host}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"}
    install()
    with _lock:
        for netloc in netlocs:
            _routes[netloc] = (app, host, port)

    def stop() -> None:
        with _lock:
            for netloc in netlocs:
                if _routes.get(netloc, (None,))[0] is app:
                    del _routes[netloc]

    return stop


def install() -> None:
    """Route botocore's URLLib3Session.send through `_send` (once per process); requests
    to servers not registered go on as before."""
    global _original_send
    with _lock:
        if _original_send is not None:
            return
        from botocore.httpsession import URLLib3Session

        _original_send = URLLib3Session.send
        URLLib3Session.send = _send


def _send(session: Any, request: Any) -> Any:
    url: str = request.url
    netloc = url.split("/", 3)[2] if url.startswith("http://") else ""
    route = _routes.get(netloc)
    if route is None:
        assert _original_send is not None
        return _original_send(session, request)
    from botocore.awsrequest import AWSResponse
    from moto.core.botocore_stubber import MockRawResponse

    app, host, port = route
    environ = wsgi_environ(request, netloc, host, port)
    found = _SERVICE.search(environ.get("HTTP_AUTHORIZATION", ""))
    if found is not None and found.group(1) in INLINE_SERVICES:
        status, headers, body = answer(app, environ)
    else:
        status, headers, body = _in_thread(app, environ, url, _read_timeout(session, request))
    if request.method == "HEAD":
        body = b""
    if not any(name.lower() == "content-length" for name, _ in headers):
        headers.append(("Content-Length", str(len(body))))
    return AWSResponse(url, status, headers, MockRawResponse(body))


def wsgi_environ(request: Any, netloc: str, host: str, port: int) -> dict[str, Any]:
    """What werkzeug's server, with moto's request handler, makes of `request` (a botocore
    AWSPreparedRequest): the body is read in full, so its length is always given."""
    from moto.core.request import (
        PRESERVED_HEADER_NAMES_ENVIRON_KEY,
        environ_key_for_header,
        should_preserve_original_header_name,
    )

    target = request.url.split(netloc, 1)[1] or "/"
    path, _, query = target.partition("?")
    body = _body_bytes(request.body)
    environ: dict[str, Any] = {
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "SERVER_SOFTWARE": "agentfn-in-process",
        "REQUEST_METHOD": request.method,
        "SCRIPT_NAME": "",
        "PATH_INFO": _latin1(unquote(path)),
        "QUERY_STRING": _latin1(query),
        "REQUEST_URI": _latin1(target),
        "RAW_URI": _latin1(target),
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": 0,
        "SERVER_NAME": host,
        "SERVER_PORT": str(port),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": netloc,  # what http.client sends
    }
    headers = [(str(name), _text(value)) for name, value in request.headers.items()]
    for name, value in headers:
        if "_" in name:
            continue
        key = name.upper().replace("-", "_")
        if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            key = f"HTTP_{key}"
            if key in environ and key != "HTTP_HOST":
                value = f"{environ[key]},{value}"
        environ[key] = value.replace("\r\n", "")
    environ.pop("HTTP_TRANSFER_ENCODING", None)  # the body is whole
    environ["CONTENT_LENGTH"] = str(len(body))
    dashed = {environ_key_for_header(name) for name, _ in headers if "_" not in name}
    names: dict[str, str] = {}
    values: dict[str, list[str]] = {}
    for name, value in headers:  # moto keeps S3 metadata names with underscores
        key = environ_key_for_header(name)
        if should_preserve_original_header_name(name) and key not in dashed:
            names.setdefault(key, name)
            values.setdefault(key, []).append(value.replace("\r\n", ""))
    for key, kept in values.items():
        environ[key] = ",".join(kept)
    environ[PRESERVED_HEADER_NAMES_ENVIRON_KEY] = names
    return environ


def answer(app: Wsgi, environ: dict[str, Any]) -> Answer:
    """The app's answer to one request; an exception is a 500, as werkzeug's server sends."""
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started[:] = [status, list(headers)]
        return lambda data: None

    try:
        output = app(environ, start_response)
        try:
            body = b"".join(output)
        finally:
            close = getattr(output, "close", None)
            if close is not None:
                close()
    except Exception:
        print("Error on request:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        raw = b"Internal Server Error"
        return 500, [("Content-Type", "text/plain; charset=utf-8")], raw
    status, headers = started
    return int(status.split(" ", 1)[0]), headers, body


def _in_thread(app: Wsgi, environ: dict[str, Any], url: str, timeout: float | None) -> Answer:
    """answer() in a thread of its own, as the server would; botocore's ReadTimeoutError
    when it takes longer than the client's read timeout (the thread goes on)."""
    result: list[Answer] = []
    thread = threading.Thread(
        target=lambda: result.append(answer(app, environ)), name="in-process-aws", daemon=True
    )
    thread.start()
    thread.join(timeout)
    if not result:
        from botocore.exceptions import ReadTimeoutError

        raise ReadTimeoutError(endpoint_url=url)
    return result[0]


def _read_timeout(session: Any, request: Any) -> float | None:
    """The read timeout botocore's session would apply to `request`."""
    timeout = session._get_request_timeout(request) or session._timeout
    if isinstance(timeout, tuple | list):
        timeout = timeout[-1]
    read = getattr(timeout, "read_timeout", timeout)
    return float(read) if isinstance(read, int | float) else None


def _body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    data = body.read()  # a file-like body (an S3 upload)
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def _text(value: Any) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def _latin1(text: str) -> str:
    """WSGI's "bytes as latin-1" form of a str (werkzeug's _wsgi_encoding_dance)."""
    return text.encode("utf-8").decode("latin-1")
