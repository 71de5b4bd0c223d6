"""`agentfn dev` serves requests at once, as API Gateway and Lambda do (infra.local.dev_concurrency).

Nothing here measures time: overlap is proven with barriers. Fifty requests that each wait
until all fifty are inside the handler can only all be answered if the server accepted
every connection (no listen backlog overflow, no reset) and served them at the same time.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import handlers.api
from infra.local.dev_concurrency import per_thread_router_state, serialized
from infra.local.dev_server import ApiBridge, make_http_server

CONNECTIONS = 50


class MeetingService:
    """A RunService stand-in whose answers wait until `parties` requests are inside."""

    def __init__(self, parties: int):
        self.barrier = threading.Barrier(parties)

    def agents(self) -> list[dict[str, Any]]:
        self.barrier.wait(timeout=30)
        return [{"name": "a", "description": "d", "model": "m"}]

    def get(self, run_id: str) -> dict[str, Any]:
        self.barrier.wait(timeout=30)
        return {"run_id": run_id, "agent": "a", "session_id": "s", "status": "running"}


@pytest.fixture
def api() -> Iterator[tuple[int, MeetingService]]:
    service = MeetingService(CONNECTIONS)
    saved = handlers.api_starts._idempotency
    handlers.api.configure(service, idempotency=None)
    server = make_http_server(ApiBridge(handlers.api.container), 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port, service
    finally:
        server.shutdown()
        server.server_close()
        handlers.api.configure(None, idempotency=saved)


def _get(port: int, path: str) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_fifty_connections_at_once_are_all_accepted_and_served_together(
    api: tuple[int, MeetingService],
) -> None:
    port, _ = api
    answers: dict[int, tuple[int, Any]] = {}

    def ask(n: int) -> None:
        answers[n] = _get(port, f"/runs/run-{n}")

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(CONNECTIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    assert sorted(answers) == list(range(CONNECTIONS))
    for n, (status, body) in answers.items():
        assert status == 200, body
        assert body["run_id"] == f"run-{n}"  # each request answered from its own event


def test_powertools_request_slot_is_one_per_thread() -> None:
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver
    from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

    per_thread_router_state()
    resolver = APIGatewayRestResolver()
    both = threading.Barrier(2)
    seen: dict[str, Any] = {}

    def serve(name: str) -> None:
        BaseRouter.current_event = name  # what Powertools' resolve() does, per request
        both.wait(timeout=10)  # the other thread has written its own meanwhile
        seen[name] = (resolver.current_event, BaseRouter.current_event)

    threads = [threading.Thread(target=serve, args=(n,)) for n in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"first": ("first", "first"), "second": ("second", "second")}


def test_moto_serves_dynamodb_and_s3_one_at_a_time_and_the_rest_as_they_come() -> None:
    inside = {"now": 0, "most": 0}
    lock = threading.Lock()
    lambdas = threading.Barrier(3)

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        with lock:
            inside["now"] += 1
            inside["most"] = max(inside["most"], inside["now"])
        if "/lambda/" in environ["HTTP_AUTHORIZATION"]:
            lambdas.wait(timeout=10)  # three invokes inside at once, or this fails
        else:
            threading.Event().wait(0.01)
        with lock:
            inside["now"] -= 1
        start_response("200 OK", [])
        return [b"{}"]

    wrapped = serialized(app)

    def call(service: str) -> None:
        auth = f"AWS4-HMAC-SHA256 Credential=testing/20250101/us-east-1/{service}/aws4_request"
        assert wrapped({"HTTP_AUTHORIZATION": auth}, lambda *_: None) == [b"{}"]

    tables = [threading.Thread(target=call, args=("dynamodb",)) for _ in range(8)]
    tables += [threading.Thread(target=call, args=("s3",)) for _ in range(4)]
    for thread in tables:
        thread.start()
    for thread in tables:
        thread.join()
    assert inside["most"] == 1
    invokes = [threading.Thread(target=call, args=("lambda",)) for _ in range(3)]
    for thread in invokes:
        thread.start()
    for thread in invokes:
        thread.join()
    assert inside["most"] == 3
