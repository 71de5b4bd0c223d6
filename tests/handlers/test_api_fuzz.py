"""Schemathesis fuzzes the API handler from the OpenAPI document the handler serves itself.

Each generated request becomes an API Gateway REST proxy event (through a tiny WSGI adapter,
so schemathesis' in-process WSGI transport can drive the Lambda handler) and is answered by a
real RunService over a MemoryStore (no AWS, no state machines: runs that do not finish inline
stay where they are). Real lookups happen: some cases target the demo agents and runs seeded
in each waiting state, not just random names. Bounded: 98 examples (an equal share per
operation), a fixed derandomised seed, no example database, offline. (Hypothesis also mixes
in constants it collects from the project's loaded modules, so the exact cases can differ
between a lone run and the full suite; no assertion depends on them.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from runtime.engine.loop import Engine
from runtime.service import RunService
from runtime.spec import AgentfnSpec
from runtime.stack import Stack
from runtime.store.memory import MemoryStore
from tests.handlers.test_handlers import FakeContext, apigw_event, route_of

EXAMPLES = 100
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def lambda_as_wsgi(handler: Callable[[dict[str, Any], Any], dict[str, Any]]) -> WsgiApp:
    """A WSGI app that does what API Gateway does: request → proxy event → Lambda → answer."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        path = environ.get("PATH_INFO", "/").encode("latin-1").decode("utf-8", "replace")
        headers = {
            key[5:].replace("_", "-").title(): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        query = dict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        resource, params = route_of(method, path)
        event = apigw_event(
            method,
            path,
            resource,
            None,
            params,
            query=query,
            headers=headers,
            raw_body=raw.decode("utf-8", "replace") if raw else None,
        )
        if "Content-Type" not in headers:
            del event["headers"]["Content-Type"]
        answer = handler(event, FakeContext())
        out_headers = dict(answer.get("headers") or {})
        for name, values in (answer.get("multiValueHeaders") or {}).items():
            out_headers[name] = ",".join(str(v) for v in values)
        status = answer["statusCode"]
        start_response(f"{status} {HTTPStatus(status).phrase}", list(out_headers.items()))
        return [(answer.get("body") or "").encode()]

    return app


@pytest.fixture(scope="module")
def api(demo_spec: AgentfnSpec) -> Iterator[tuple[WsgiApp, RunService]]:
    import handlers.api

    service = RunService(Engine(demo_spec, MemoryStore()), Stack(), sfn=None, lambda_client=None)
    handlers.api.configure(service)
    try:
        with watch_key():
            yield lambda_as_wsgi(handlers.api.handler), service
    finally:
        handlers.api.configure(None)


@contextmanager
def watch_key() -> Iterator[None]:
    """The stack's watch key (GET …/watch-token signs with it), in moto's Secrets Manager."""
    import os
    import secrets

    import boto3
    from moto import mock_aws

    import handlers.live
    from runtime.live.watch_token import KEY_SECRET_ENV

    saved = os.environ.get(KEY_SECRET_ENV)
    handlers.live._clients.clear()
    with mock_aws():
        manager = boto3.client("secretsmanager", region_name="us-east-1")
        key = manager.create_secret(Name="watch-key", SecretString=secrets.token_urlsafe(48))
        os.environ[KEY_SECRET_ENV] = key["ARN"]
        try:
            yield
        finally:
            handlers.live._clients.clear()
            if saved is None:
                del os.environ[KEY_SECRET_ENV]
            else:
                os.environ[KEY_SECRET_ENV] = saved


def seeded_runs(service: RunService) -> list[str]:
    """One run in each state a run-level operation cares about."""
    runs = []
    for agent, wait in [("orders", 5), ("orders", 0), ("billing", 5), ("triage", 5)]:
        _, body = service.start(agent, "fuzz", wait_seconds=wait)
        runs.append(body["run_id"])
    states = {service.get(r)["status"] for r in runs}
    assert states == {"succeeded", "running", "awaiting_approval", "awaiting_input"}, states
    return runs


def test_the_api_never_answers_5xx_to_generated_requests(
    api: tuple[WsgiApp, RunService],
) -> None:
    app, service = api
    schema = schemathesis.openapi.from_wsgi("/openapi.json", app)
    runs = seeded_runs(service)
    operations = [result.ok() for result in schema.get_all_operations()]
    seen: dict[str, set[int]] = {}
    for operation in operations:  # an equal share of the examples for each operation
        fuzz(app, operation, targets(operation, runs), EXAMPLES // len(operations), seen)
    covered = "\n".join(f"{label}: {sorted(codes)}" for label, codes in sorted(seen.items()))
    print(covered)
    assert set(seen) == {o.label for o in operations}, covered
    codes = set().union(*seen.values())
    assert codes & {200, 202} and codes & {400, 404, 409}, covered
    assert max(codes) < 500, covered


def targets(operation: schemathesis.APIOperation, runs: list[str]) -> list[dict[str, str]]:
    """Path parameters that name real things, besides the random ones schemathesis makes."""
    names = {p.name for p in operation.path_parameters}
    if "agent" in names:
        return [
            {"agent": agent} for agent in ("orders", "support", "triage", "billing")
        ]  # no Bedrock
    if "run_id" in names:
        return [{"run_id": run_id} for run_id in runs]
    return []


def fuzz(
    app: WsgiApp,
    operation: schemathesis.APIOperation,
    targets: list[dict[str, str]],
    examples: int,
    seen: dict[str, set[int]],
) -> None:
    strategies = [
        operation.as_strategy(mode, path_parameters=params)
        for params in [None, *targets]
        for mode in GenerationMode
    ]

    @given(case=st.one_of(strategies))
    @settings(
        max_examples=examples,
        derandomize=True,  # a fixed seed
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def one(case: schemathesis.Case) -> None:
        response = case.call(app=app)
        seen.setdefault(case.operation.label, set()).add(response.status_code)
        case.validate_response(response, checks=CHECKS)

    one()
