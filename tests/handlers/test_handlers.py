"""The Lambda entry points exist, import light, and answer clearly (not implemented yet)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from runtime.routes import ROUTES
from tests.helpers import ROOT


def apigw_event(
    method: str,
    path: str,
    resource: str,
    body: dict[str, Any] | None = None,
    path_parameters: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An API Gateway REST proxy event, shaped like `sam local generate-event apigateway aws-proxy`."""
    return {
        "body": json.dumps(body) if body is not None else None,
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "isBase64Encoded": False,
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": path_parameters,
        "stageVariables": None,
        "headers": {
            "Accept": "application/json",
            "Content-Type": "application/json",
            "Host": "abc.execute-api.us-east-1.amazonaws.com",
        },
        "multiValueHeaders": {},
        "requestContext": {
            "accountId": "123456789012",
            "resourceId": "123456",
            "stage": "v1",
            "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
            "requestTime": "09/Apr/2015:12:34:56 +0000",
            "requestTimeEpoch": 1428582896000,
            "identity": {"sourceIp": "127.0.0.1", "userAgent": "pytest"},
            "path": f"/v1{path}",
            "resourcePath": resource,
            "httpMethod": method,
            "apiId": "1234567890",
            "protocol": "HTTP/1.1",
        },
    }


class FakeContext:
    function_name = "ApiFunction"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:ApiFunction"
    aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


@pytest.mark.parametrize("route", [r for r in ROUTES if r.name != "OpenApi"], ids=lambda r: r.name)
def test_every_api_route_answers_501_not_implemented(route: Any) -> None:
    from handlers.api import handler

    path = route.path.replace("{agent}", "support").replace("{run_id}", "run-1")
    response = handler(
        apigw_event(
            route.method, path, route.path, body={"input": "hi"} if route.method == "POST" else None
        ),
        FakeContext(),
    )
    assert response["statusCode"] == 501
    body = json.loads(response["body"])
    assert body["error_code"] == "NOT_IMPLEMENTED"
    assert route.name in body["error_message"]


def test_unknown_route_is_404_not_500() -> None:
    from handlers.api import handler

    response = handler(apigw_event("GET", "/nope", "/nope"), FakeContext())
    assert response["statusCode"] == 404


def test_openapi_document_lists_the_routes() -> None:
    from handlers.api import handler

    response = handler(apigw_event("GET", "/openapi.json", "/openapi.json"), FakeContext())
    assert response["statusCode"] == 200
    document = json.loads(response["body"])
    assert document["openapi"].startswith("3.")
    served = {(m.upper(), p) for p, ops in document["paths"].items() for m in ops}
    assert served == {(r.method, r.path) for r in ROUTES}


@pytest.mark.parametrize("action", ["advance", "wait", "timeout", "result", "fail"])
def test_step_handler_answers_not_implemented_as_a_failed_status(
    action: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handlers.step import handler

    monkeypatch.setenv("AGENTFN_AGENT", "support")
    out = handler({"action": action, "run_id": "run-1"}, FakeContext())
    assert out["run_id"] == "run-1" and out["status"] == "failed"
    assert out["error_code"] == "NOT_IMPLEMENTED" and "support" in out["error_message"]


def test_step_handler_rejects_an_unknown_action() -> None:
    from handlers.step import handler

    out = handler({"action": "explode", "run_id": "r"}, FakeContext())
    assert out["error_code"] == "BAD_REQUEST"


HEAVY = ("yaml", "infra", "moto", "jsonschema", "mcp", "httpx", "boto3")


@pytest.mark.parametrize("module", ["handlers.step", "handlers.api"])
def test_handler_import_pulls_in_nothing_heavy(module: str) -> None:
    """Cold start guard: a handler import must not drag in build-time or heavy modules."""
    code = (
        f"import sys, json; import {module}; "
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(out.stdout))
    assert not loaded & set(HEAVY), loaded & set(HEAVY)
