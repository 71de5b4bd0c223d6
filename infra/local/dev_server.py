"""`agentfn dev`: the whole stack on loopback, for curl, the CLI helpers and `aws`.

One process holds everything (DESIGN §8): a moto server on 127.0.0.1:<aws-port> (DynamoDB,
S3, Step Functions that really execute, Lambda without Docker, EventBridge), so `aws
--endpoint-url` sees the state the runs use — in this process, because the agents' Lambda
functions are dispatched to the real handlers here (infra.local.local_lambda); the generated state
machines and the step handler (infra.local.embedded_stack); and the HTTP API on 127.0.0.1:<port>,
where each request becomes an API Gateway REST proxy event (stage "dev") for
`handlers.api.handler`. Nothing listens beyond loopback, and both ports refuse what a web
page could send them (infra.local.dev_origin); Ctrl-C or SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import base64
import json
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from infra.local import dev_console
from infra.local.dev_aws import HOST, LISTEN_BACKLOG, MotoServer, create_watch_key, pointed_at
from infra.local.dev_gateway import proxy_event
from infra.local.dev_origin import ALLOW_HOSTS_ENV, Refusal, allowed_hosts, api_refusal
from infra.local.dev_stream import serve as serve_stream
from infra.local.dev_stream import wants_stream
from infra.local.live_hub import LiveHub

DEFAULT_PORT = 8321
DEFAULT_AWS_PORT = 5005
MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's payload limit
SHUTDOWN_GRACE_SECONDS = 10.0

Handler = Callable[[dict[str, Any], Any], Any]
Answer = tuple[int, list[tuple[str, str]], bytes]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--file", default="agents.yaml")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="the API's port")
    parser.add_argument(
        "--aws-port", type=int, default=DEFAULT_AWS_PORT, help="the AWS endpoint's port (moto)"
    )
    parser.add_argument(
        "--no-reload",
        action="store_true",
        help="serve the spec as it was at start (default: reload on edits to it and its tools)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help=f"answer requests whose Host is NAME too, besides loopback names and addresses "
        f"(a container's name; repeatable; also {ALLOW_HOSTS_ENV}=NAME,NAME)",
    )


class ApiBridge:
    """Calls the API handler as API Gateway + Lambda do: each request in a warm container of
    its own (infra.local.dev_concurrency), so requests are served at once, as deployed."""

    def __init__(self, new_container: Callable[[], Handler]):
        from infra.local.dev_concurrency import ApiContainers

        self.containers = ApiContainers(new_container)

    def __call__(self, event: dict[str, Any]) -> Answer:
        from infra.local.local_lambda import LocalContext

        context = LocalContext("agentfn-api", timeout_ms=29_000)
        context.aws_request_id = event["requestContext"]["requestId"]
        try:
            return _http_answer(self.containers(event, context))
        except Exception:  # what API Gateway answers for a crashed or malformed integration
            traceback.print_exc(file=sys.stderr)
            body = json.dumps({"message": "Internal server error"}).encode()
            return 502, [("Content-Type", "application/json")], body


def _http_answer(answer: Any) -> Answer:
    if not isinstance(answer, dict) or "statusCode" not in answer:
        raise ValueError(f"malformed Lambda proxy response: {str(answer)[:200]}")
    multi = answer.get("multiValueHeaders") or {}
    headers = [(name, str(v)) for name, values in multi.items() for v in values]
    headers += [(k, str(v)) for k, v in (answer.get("headers") or {}).items() if k not in multi]
    body = answer.get("body") or ""
    raw = base64.b64decode(body) if answer.get("isBase64Encoded") else str(body).encode()
    return int(answer["statusCode"]), headers, raw


def refused(refusal: Refusal) -> Answer:
    """The API's error shape for a request infra.local.dev_origin refuses; the connection closes
    (the unread body must not be taken for the next request)."""
    body = {"error_code": refusal.error_code, "error_message": refusal.message}
    raw = json.dumps({**body, "field": refusal.field}).encode()
    return refusal.status, [("Content-Type", "application/json")], raw


_HOP_BY_HOP = {"content-length", "transfer-encoding", "connection", "keep-alive"}


class _RequestHandler(BaseHTTPRequestHandler):
    server_version = "agentfn-dev"
    bridge: ApiBridge  # set on the subclass make_http_server builds
    hub: LiveHub | None = None  # runs' live events (SSE), when the stack publishes them
    allowed: frozenset[str] = frozenset()  # Host names accepted besides loopback ones

    def _serve(self) -> None:
        started = time.monotonic()
        refusal = api_refusal(self.command, self.headers.get, self.allowed)
        if refusal is not None:  # before the body is read: it is never looked at
            self.close_connection = True
            self._send(refused(refusal), started)
            return
        length = int(self.headers.get("Content-Length") or 0)
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower() or length < 0:
            self._send((411, [], b"send the body with a Content-Length"), started)
            return
        if length > MAX_BODY_BYTES:
            self._send((413, [], b"request body over API Gateway's 10 MB"), started)
            return
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        page = self.hub and dev_console.answer(self.command, parts.path, parts.query, self.hub)
        if page:
            self._send(page, started)
            return
        if self.hub is not None and wants_stream(
            self.command, urlsplit(self.path).path, self.headers.get("Accept", "")
        ):
            status = serve_stream(self, self.bridge, self.hub, body)
            self._log(status, started)
            return
        host = self.headers.get("Host") or f"{HOST}:{getattr(self.server, 'server_port', '')}"
        headers = list(self.headers.items())
        event = proxy_event(
            self.command, self.path, headers, body, source_ip=self.client_address[0], host=host
        )
        self._send(self.bridge(event), started)

    def _send(self, answer: Answer, started: float) -> None:
        status, headers, raw = answer
        note = ""
        try:
            self.send_response(status)
            for name, value in headers:
                if name.lower() not in _HOP_BY_HOP:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(raw)
        except (BrokenPipeError, ConnectionResetError):
            note = ", the caller had gone"
        self._log(status, started, note)

    def _log(self, status: int, started: float, note: str = "") -> None:
        took = (time.monotonic() - started) * 1000
        line = f"{time.strftime('%H:%M:%S')} {self.command} {self.path} → {status}"
        print(f"{line} ({took:.0f} ms{note})", file=sys.stderr, flush=True)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # _send writes one line per request

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _serve


class _ApiServer(ThreadingHTTPServer):
    request_queue_size = LISTEN_BACKLOG  # socketserver's 5 reset a burst of connections


def make_http_server(
    bridge: ApiBridge,
    port: int,
    host: str = HOST,
    hub: LiveHub | None = None,
    allowed: frozenset[str] = frozenset(),
) -> ThreadingHTTPServer:
    """The API's server; `allowed`: Host names to answer besides loopback
    (infra.local.dev_origin)."""
    attributes = {"bridge": bridge, "hub": hub, "allowed": allowed}
    return _ApiServer((host, port), type("ApiRequestHandler", (_RequestHandler,), attributes))


# ---- the AWS side --------------------------------------------------------------------------


def _both(*listeners: Callable[[Any], None]) -> Callable[[Any], None]:
    def each(event: Any) -> None:
        for listener in listeners:
            listener(event)

    return each


def template_for(spec: Any, spec_path: Path) -> Path | None:
    """The committed template.yaml next to the spec when it is what the spec produces, else
    None (the stack generates the definitions itself)."""
    from infra.sam.template import build_template, render

    committed = spec_path.resolve().parent / "template.yaml"
    if not committed.exists() or committed.read_text("utf-8") == render(build_template(spec)):
        return committed if committed.exists() else None
    note = f"note: {committed.name} is out of date with {spec_path.name}; using the state"
    print(f"{note} machines generated from the spec (`agentfn build` updates it)", file=sys.stderr)
    return None


# ---- the command ---------------------------------------------------------------------------


def dev_command(args: argparse.Namespace) -> int:
    import handlers.api
    from infra.checks.environments import selected
    from infra.checks.validate import validate_file

    spec_path = Path(args.file)
    result = validate_file(spec_path, selected(getattr(args, "env", None)))
    if not result.ok or result.spec is None:
        lines = [*map(str, result.issues), f"{len(result.issues)} problem(s) in {args.file}."]
        print("\n".join(lines), file=sys.stderr)
        return 1
    project = str(spec_path.resolve().parent)
    if project not in sys.path:
        sys.path.insert(0, project)  # the spec's own tools package
    aws, where = None, f"{HOST}:{args.aws_port} (--aws-port)"
    allowed = allowed_hosts(args.allow_host)
    try:
        aws = MotoServer(args.aws_port, allowed=allowed)
        where = f"{HOST}:{args.port} (--port)"
        bridge = ApiBridge(handlers.api.container)
        api = make_http_server(bridge, args.port, hub=LiveHub(), allowed=allowed)
    except OSError as exc:
        if aws is not None:
            aws.server.server_close()
        print(f"cannot listen on {where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        reload = None if args.no_reload else selected(getattr(args, "env", None)) or ""
        serve(result.spec, spec_path, aws, api, stop, reload=reload)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def serve(
    spec: Any,
    spec_path: Path,
    aws: MotoServer,
    api: ThreadingHTTPServer,
    stop: threading.Event,
    reload: str | None = None,
) -> None:
    """Start the AWS side and the stack, answer requests until `stop` is set, shut down.
    `reload`: the environment to reload the spec with on edits ("" for none); None: never."""
    import boto3

    from infra.local.aws import (
        LOCAL_BUCKET,
        LOCAL_REGION,
        LOCAL_TABLE,
        AwsClients,
        create_resources,
    )
    from infra.local.dev_banner import banner
    from infra.local.embedded_stack import EmbeddedStack
    from infra.local.local_lambda import dispatching
    from infra.local.progress import Progress
    from runtime.tools.mcp import stop_all

    api_thread = threading.Thread(target=api.serve_forever, daemon=True)
    bridge: ApiBridge = api.RequestHandlerClass.bridge  # type: ignore[attr-defined]
    hub: LiveHub | None = getattr(api.RequestHandlerClass, "hub", None)
    with pointed_at(aws.url, aws.port), dispatching():
        aws.start()
        try:
            client = {"region_name": LOCAL_REGION, "endpoint_url": aws.url}
            clients = AwsClients(
                boto3.client("dynamodb", **client),
                boto3.client("s3", **client),
                LOCAL_TABLE,
                LOCAL_BUCKET,
                boto3.client("lambda", **client),
            )
            create_resources(clients)
            create_watch_key(aws.url)
            progress = Progress(sys.stderr, True, tag_runs=True)  # as `agentfn run`
            watch: dict[str, Any] = {"listener": progress}
            if hub is not None:  # SSE watchers: every event, and the answers as they stream
                watch = {"listener": _both(progress, hub.on_event), "chunks": hub.on_chunk}
            template = template_for(spec, spec_path)
            stack = EmbeddedStack(spec, clients, template_path=template, engine_options=watch)
            stack.serve_api()
            if reload is not None:
                from infra.local.dev_reload import start_reloading

                start_reloading(stack, spec_path, reload or None, clients, watch, stop)
            api_thread.start()
            print(banner(spec, spec_path, api.server_port, aws.url), flush=True)
            while not stop.wait(0.5):
                pass
            print("shutting down…", file=sys.stderr, flush=True)
        finally:
            if hub is not None:
                hub.close()  # watchers' streams end, so their threads do
            if api_thread.is_alive():
                api.shutdown()
            api.server_close()
            stop_all(SHUTDOWN_GRACE_SECONDS)  # cancel runs: no signal reaches their MCP servers
            bridge.containers.wait_idle(SHUTDOWN_GRACE_SECONDS)  # requests may finish
            aws.stop()
