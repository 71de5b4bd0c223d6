"""The AWS side of `agentfn dev`: moto's server on loopback, in this process, and the
environment that points every boto3 client in the process at it."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

HOST = "127.0.0.1"
LISTEN_BACKLOG = 1024  # connections waiting to be accepted, on either port


class MotoServer:
    """moto's server on loopback, in this process, in a thread: what ThreadedMotoServer
    builds, but bound here first, so a port in use is an immediate OSError (werkzeug calls
    sys.exit, in ThreadedMotoServer's thread, and its start() then waits forever)."""

    def __init__(self, port: int, host: str = HOST):
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication as Application
        from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        from infra.dev_concurrency import serialized
        from infra.local_dynamodb import install

        install()  # moto's DynamoDB without its table-wide copies (infra.local_dynamodb)
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access log per AWS call
        app = serialized(Application(create_backend_app))
        bound = socket.create_server((host, port), backlog=LISTEN_BACKLOG)
        with bound:  # werkzeug would sys.exit on OSError
            self.server = make_server(
                host, port, app, True, request_handler=MotoRequestHandler, fd=bound.fileno()
            )
        self.port = self.server.socket.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        import httpx

        self.thread.start()
        # Step Functions executions must really run; Lambda must not need Docker.
        config = {"lambda": {"use_docker": False}, "stepfunctions": {"execute_state_machine": True}}
        httpx.post(f"{self.url}/moto-api/config", json=config, timeout=10).raise_for_status()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


_AWS_ENV = {"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"}


@contextmanager
def pointed_at(url: str, port: int) -> Iterator[None]:
    """boto3 in this process (and moto's own Step Functions clients, via MOTO_PORT) talk to
    the local endpoint with dummy credentials that cannot reach a real account; the handlers
    find the table and bucket names where the deployed functions do."""
    from infra.local import LOCAL_BUCKET, LOCAL_REGION, LOCAL_TABLE

    saved = dict(os.environ)
    for key in list(os.environ):  # nothing may send these clients anywhere else
        if key in _AWS_ENV or key.startswith(("AWS_ENDPOINT_URL", "AWS_IGNORE_CONFIGURED")):
            del os.environ[key]
    no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1,localhost"]))
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": LOCAL_REGION,
            "AWS_REGION": LOCAL_REGION,
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
