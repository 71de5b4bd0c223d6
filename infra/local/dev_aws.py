"""The AWS side of `agentfn dev`: moto's server on loopback, in this process, and what
points the stack's clients at it.

Two modes, as `agentfn run`'s (infra.local.aws): by default only the stack's own clients (the
runs table, the bucket, the state machines, EventBridge, the stack's functions) talk to the
server, which keeps its DynamoDB and S3 state in the project's local state (`.agentfn/local/`,
infra.local.local_state, shared with `agentfn run` and `agentfn status|approve …`), while Bedrock,
Lambda tools by ARN, knowledge bases, AgentCore, secrets and the RDS Data API go where the
user's environment sends them (`stack_only`); with `--offline`, every boto3 client of the
process is pointed at the server with dummy credentials and nothing is kept (`pointed_at`).

moto's server answers every request, from anyone: it wraps its Flask apps in flask-cors
(`Access-Control-Allow-Origin` for any Origin, preflights granted) unless
MOTO_DISABLE_GLOBAL_CORS was set before moto was imported, S3 adds a bucket's own CORS rules,
and it ignores credentials. So any web page could read the runs' table. `guarded` wraps its
WSGI app: a request is answered only when its Host is a loopback name (infra.local.dev_origin), it
carries no Origin (a browser adds one to every cross-origin fetch), it is not a preflight
(OPTIONS), and it is signed (SigV4, in the Authorization header or a presigned URL's
X-Amz-Credential) with the dev stack's own access key id — a page cannot send an
Authorization header without a preflight. No `Access-Control-*` header ever leaves it.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from infra.local.dev_origin import host_refusal
from infra.local.local_state import RequestLog

HOST = "127.0.0.1"
LISTEN_BACKLOG = 1024  # connections waiting to be accepted, on either port
#: The dev stack's credentials (pointed_at; the README's `aws` examples use them) — dummy
#: ones, never valid on AWS.
ACCESS_KEY_ID = "testing"
#: The access key ids the endpoint answers: the stack's, and the one moto's own Step Functions
#: interpreter signs its Lambda calls with (moto.stepfunctions.parser…boto_client: "ak").
OWN_KEY_IDS = frozenset({ACCESS_KEY_ID, "ak"})
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/")
_SIGV2 = re.compile(r"AWS ([^:\s]+):")

Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class MotoServer:
    """moto's server on loopback, in this process, in a thread: what ThreadedMotoServer
    builds, but bound here first, so a port in use is an immediate OSError (werkzeug calls
    sys.exit, in ThreadedMotoServer's thread, and its start() then waits forever)."""

    def __init__(
        self,
        port: int,
        host: str = HOST,
        allowed: frozenset[str] = frozenset(),
        state: Path | None = None,
    ):
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication as Application
        from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        from infra.local import local_sfn
        from infra.local.dev_concurrency import serialized
        from infra.local.local_dynamodb import install
        from infra.local.local_dynamodb_answers import direct

        install()  # moto's DynamoDB without its table-wide copies (infra.local.local_dynamodb)
        local_sfn.install()  # its Step Functions without per-execution parses (local_sfn)
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access log per AWS call
        served: Wsgi = serialized(direct(Application(create_backend_app)))
        self.log: RequestLog | None = None
        if state is not None:  # DynamoDB and S3 kept on disk, shared with other processes
            self.log = RequestLog(served, state)
            served = self.log
        self.served = served  # what this process's own clients reach in process
        self._in_process: Callable[[], None] | None = None
        app = guarded(served, allowed)
        bound = socket.create_server((host, port), backlog=LISTEN_BACKLOG)
        with bound:  # werkzeug would sys.exit on OSError
            self.server = make_server(
                host, port, app, True, request_handler=MotoRequestHandler, fd=bound.fileno()
            )
        self.port = self.server.socket.getsockname()[1]
        self.host = host
        self.url = f"http://{host}:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        from moto.moto_api._internal.models import moto_api_backend

        # Step Functions executions must really run; Lambda must not need Docker. Set here,
        # in process: the guard refuses moto's unsigned /moto-api/ routes.
        config = {"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}}
        moto_api_backend.set_config(config)
        if self.log is not None:  # what `agentfn run` (or an earlier dev) left: replayed
            with self.log.locked():
                self.log.catch_up()
                self.log.compact_if_large()
        self.thread.start()
        from infra.local.in_process import serve_in_process

        # This process's clients skip loopback HTTP (infra.local.in_process); others use it.
        self._in_process = serve_in_process(self.served, self.host, self.port)

    def stop(self) -> None:
        if self._in_process is not None:
            self._in_process()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
        if self.log is not None:
            self.log.close()


def key_id(environ: dict[str, Any]) -> str | None:
    """The access key id a request is signed with, if any: SigV4 (`Credential=KEY/…`) or S3's
    SigV2 (`AWS KEY:signature`) in Authorization, or a presigned URL's X-Amz-Credential /
    AWSAccessKeyId (boto3 presigns S3 URLs with either)."""
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    found = _CREDENTIAL.search(authorization) or _SIGV2.match(authorization)
    if found is not None:
        return found.group(1)
    query = parse_qs(environ.get("QUERY_STRING", ""))
    credential = query.get("X-Amz-Credential", [""])[0]
    if "/" in credential:
        return credential.split("/", 1)[0]
    return query.get("AWSAccessKeyId", [None])[0]


def aws_refusal(environ: dict[str, Any], allowed: frozenset[str]) -> str | None:
    """Why the AWS endpoint refuses this request (None: it may be answered)."""
    refusal = host_refusal(lambda name: environ.get(f"HTTP_{name.upper()}"), allowed)
    if refusal is not None:
        return refusal.message
    origin = environ.get("HTTP_ORIGIN")
    if environ.get("REQUEST_METHOD") == "OPTIONS" or origin is not None:
        return f"no request from a web page (Origin {origin!r}) and no CORS preflight"
    key = key_id(environ)
    if key is None:
        return (
            f"sign the request (SigV4) with the dev stack's credentials (key id {ACCESS_KEY_ID!r})"
        )
    if key not in OWN_KEY_IDS:
        return f"access key id {key!r} is not the dev stack's ({ACCESS_KEY_ID!r})"
    return None


def guarded(app: Wsgi, allowed: frozenset[str] = frozenset()) -> Wsgi:
    """moto's WSGI app behind the rules above: a refused request gets 403 and a line on
    stderr; an answered one loses every Access-Control-* header moto or S3 added."""

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        why = aws_refusal(environ, allowed)
        if why is not None:
            method, path = environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", "")
            line = f"{time.strftime('%H:%M:%S')} AWS endpoint refused {method} {path}: {why}"
            print(line, file=sys.stderr, flush=True)
            raw = f"403 Forbidden: {why}\n".encode()
            headers = [
                ("Content-Type", "text/plain; charset=utf-8"),
                ("Content-Length", str(len(raw))),
            ]
            start_response("403 Forbidden", headers)
            return [raw]

        def start(status: str, headers: list[tuple[str, str]], *exc_info: Any) -> Any:
            kept = [(k, v) for k, v in headers if not k.lower().startswith("access-control-")]
            return start_response(status, kept, *exc_info)

        return app(environ, start)

    return serve


WATCH_KEY_NAME = "agentfn-local-watch-key"


def create_watch_key(url: str) -> None:
    """The dev stack's watch key (runtime.live.watch_token): a random secret in the local
    Secrets Manager, as the deployed stack generates one; the API finds it by the
    environment, with the stack's own Secrets Manager client (the process's default one may
    be real AWS)."""
    import secrets

    from handlers.live import use_client
    from infra.local.aws import stack_client
    from runtime.live.watch_token import KEY_SECRET_ENV

    manager = stack_client("secretsmanager", url)
    with suppress(manager.exceptions.ResourceExistsException):  # kept from an earlier start
        manager.create_secret(Name=WATCH_KEY_NAME, SecretString=secrets.token_urlsafe(48))
    use_client("secretsmanager", manager)
    os.environ[KEY_SECRET_ENV] = WATCH_KEY_NAME


_AWS_ENV = {"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"}


@contextmanager
def pointed_at(url: str, port: int) -> Iterator[None]:
    """boto3 in this process (and moto's own Step Functions clients, via MOTO_PORT) talk to
    the local endpoint with dummy credentials that cannot reach a real account; the handlers
    find the table and bucket names where the deployed functions do."""
    from infra.local.aws import LOCAL_REGION

    saved = dict(os.environ)
    for key in list(os.environ):  # nothing may send these clients anywhere else
        if key in _AWS_ENV or key.startswith(("AWS_ENDPOINT_URL", "AWS_IGNORE_CONFIGURED")):
            del os.environ[key]
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": url,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": ACCESS_KEY_ID,
            "AWS_DEFAULT_REGION": LOCAL_REGION,
            "AWS_REGION": LOCAL_REGION,
        }
    )
    try:
        with stack_only(port):  # and what the stack itself needs
            yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextmanager
def stack_only(port: int) -> Iterator[None]:
    """What the stack needs from the process's environment when only its own clients use
    the local endpoint: moto's Step Functions interpreter calls the stack's functions on
    MOTO_PORT (never through a proxy), and the handlers find the table and bucket names
    where the deployed functions do. Credentials, region and AWS_ENDPOINT_URL_* stay the
    user's."""
    from infra.local.aws import LOCAL_BUCKET, LOCAL_TABLE

    saved = dict(os.environ)
    no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1,localhost"]))
    os.environ.update(
        {
            "MOTO_PORT": str(port),
            "NO_PROXY": no_proxy,
            "no_proxy": no_proxy,
            "AGENTFN_TABLE": LOCAL_TABLE,
            "AGENTFN_BUCKET": LOCAL_BUCKET,
        }
    )
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
