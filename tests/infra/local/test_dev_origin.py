"""`agentfn dev` against what a web page can send it (issue 22, point 1), over real HTTP to a
real `agentfn dev` subprocess: DNS-rebinding Host values (curl resolving an attacker's name
to 127.0.0.1, and forged Host headers), requests a page can send without a CORS preflight
(no Content-Type, text/plain, a form), a foreign Origin on every route, and the embedded AWS
endpoint's CORS and credentials. Each attack targets a refund that waits for approval, and
the test checks it still waits, with no decision recorded. (The same attacks from a page in
headless Chromium: tests/infra/local/test_dev_console.py.)"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import boto3
import httpx
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from infra.local.dev_aws import aws_refusal, guarded, key_id
from infra.local.dev_origin import allowed_hosts, api_refusal, is_local_host
from runtime.routes import ROUTES
from tests.helpers import wait_for
from tests.infra.local.test_dev_server import Dev, _run, serve_dev

ALLOWED = "devbox.test"  # --allow-host
ALLOWED_BY_ENV = "agentfn.internal"  # AGENTFN_DEV_ALLOW_HOSTS
REBOUND = ["attacker.example", "localhost.attacker.example", "127.0.0.1.nip.io"]


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    env = {"AGENTFN_DEV_ALLOW_HOSTS": f"{ALLOWED_BY_ENV}, "}
    yield from serve_dev(tmp_path_factory, "--allow-host", ALLOWED, env=env)


def _port(url: str) -> int:
    return int(urlsplit(url).port or 0)


def waiting_refund(dev: Dev) -> str:
    """A billing run waiting for a person to approve its refund (the attacks' target)."""
    started = httpx.post(
        f"{dev.api}/agents/billing/runs",
        json={"input": "Refund ORD-1001, it arrived broken", "wait_seconds": 0},
        timeout=20,
    )
    assert started.status_code == 202, started.text
    run_id: str = started.json()["run_id"]
    wait_for(lambda: _run(dev, run_id)["status"] == "awaiting_approval", what="the approval")
    return run_id


def assert_still_waiting(dev: Dev, run_id: str) -> None:
    run = _run(dev, run_id)
    assert run["status"] == "awaiting_approval", run
    events = httpx.get(f"{dev.api}/runs/{run_id}/events?limit=500", timeout=10).json()["events"]
    assert "approval_decided" not in {e["type"] for e in events}


def signed(
    url: str, body: dict[str, Any], key: str = "testing", host: str = "", **extra: str
) -> httpx.Response:
    """A DynamoDB call signed with SigV4 as boto3 signs it; `host`: the Host it claims;
    `extra`: headers added after signing."""
    target = f"http://{host}/" if host else f"{url}/"
    request = AWSRequest(
        method="POST",
        url=target,
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": "DynamoDB_20120810.Scan",
        },
    )
    SigV4Auth(Credentials(key, "testing"), "dynamodb", "us-east-1").add_auth(request)
    headers = dict(request.headers.items())
    headers["Host"] = host or urlsplit(url).netloc
    headers.update(extra)
    return httpx.post(f"{url}/", content=request.body, headers=headers, timeout=10)


SCAN = {"TableName": "agentfn-local"}


# ---- the rules, one by one ------------------------------------------------------------


def test_which_host_values_count_as_loopback() -> None:
    for host in ("127.0.0.1:8321", "127.0.0.1", "127.9.9.9:1", "localhost:8321", "LOCALHOST.",
                 "[::1]:8321", "::1", "console.localhost:8321"):  # fmt: skip
        assert is_local_host(host), host
    for host in (None, "", "attacker.example:8321", "localhost.attacker.example", "0x7f.1",
                 "127.1", "2130706433", "10.0.0.5:8321", "[::2]:8321", "127.0.0.1.nip.io",
                 "0.0.0.0:8321"):  # fmt: skip
        assert not is_local_host(host), host
    allowed = allowed_hosts(["DevBox.test:8321"], {"AGENTFN_DEV_ALLOW_HOSTS": "a.internal, ,b"})
    assert allowed == {"devbox.test", "a.internal", "b"}
    assert is_local_host("devbox.test:9999", allowed) and not is_local_host("devbox.test2", allowed)


def test_which_requests_the_api_rules_refuse() -> None:
    def refusal(method: str, **headers: str) -> tuple[int, str] | None:
        given = {k.replace("_", "-").lower(): v for k, v in headers.items()}
        found = api_refusal(method, lambda name: given.get(name.lower()), frozenset())
        return (found.status, found.field) if found else None

    here = {"Host": "127.0.0.1:8321"}
    assert refusal("GET", **here) is None
    assert refusal("GET", **here, Origin="http://127.0.0.1:8321") is None  # the console
    assert refusal("POST", **here, Origin="http://127.0.0.1:8321", Content_Type="application/json; charset=utf-8") is None  # fmt: skip
    assert refusal("GET", **here, Origin="http://127.0.0.2:8321") == (403, "Origin")
    assert refusal("GET", **here, Origin="http://localhost:8321") == (403, "Origin")
    assert refusal("GET", **here, Origin="null") == (403, "Origin")
    assert refusal("GET", **here, Sec_Fetch_Site="cross-site", Sec_Fetch_Mode="cors") == (403, "Sec-Fetch-Site")  # fmt: skip
    assert refusal("GET", **here, Sec_Fetch_Site="cross-site", Sec_Fetch_Mode="navigate") is None
    assert refusal("POST", **here, Sec_Fetch_Site="same-site", Sec_Fetch_Mode="navigate", Content_Type="application/json") == (403, "Sec-Fetch-Site")  # fmt: skip
    for kind in (None, "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                 "multipart/form-data; boundary=x", "application/jsonx"):  # fmt: skip
        sent = {"Content_Type": kind} if kind else {}
        assert refusal("POST", **here, **sent) == (415, "Content-Type"), kind
    assert refusal("GET", Host="attacker.example:8321") == (403, "Host")


def test_the_aws_guard_strips_cors_headers_and_wants_the_stacks_key() -> None:
    def moto_like(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Access-Control-Allow-Origin", "*"), ("X-Kept", "1")])
        return [b"{}"]

    app = guarded(moto_like)
    sent: list[Any] = []
    auth = "AWS4-HMAC-SHA256 Credential=testing/20261126/us-east-1/dynamodb/aws4_request, S=x"
    environ = {"REQUEST_METHOD": "POST", "HTTP_HOST": "127.0.0.1:5005", "HTTP_AUTHORIZATION": auth}
    assert app(environ, lambda status, headers, *_: sent.append((status, headers))) == [b"{}"]
    assert sent == [("200 OK", [("X-Kept", "1")])]
    presigned = {"QUERY_STRING": "X-Amz-Credential=testing%2F20261126%2Fus-east-1%2Fs3"}
    assert key_id(presigned) == "testing"
    assert key_id({"QUERY_STRING": "AWSAccessKeyId=testing&Signature=x"}) == "testing"
    assert key_id({"HTTP_AUTHORIZATION": "AWS testing:c2lnbmF0dXJl"}) == "testing"
    assert key_id({"HTTP_AUTHORIZATION": "Bearer x", "QUERY_STRING": "a=b"}) is None
    assert aws_refusal({**environ, "REQUEST_METHOD": "OPTIONS"}, frozenset())
    assert aws_refusal({**environ, "HTTP_ORIGIN": "http://127.0.0.2"}, frozenset())
    assert aws_refusal({**environ, "HTTP_AUTHORIZATION": ""}, frozenset())
    assert aws_refusal({**environ, "HTTP_HOST": "attacker.example:5005"}, frozenset())
    other = {**environ, "HTTP_AUTHORIZATION": auth.replace("testing", "AKIAOTHER")}
    assert "not the dev stack's" in str(aws_refusal(other, frozenset()))


# ---- the attacks, on a running agentfn dev ------------------------------------------


def curl(*args: str) -> tuple[int, str]:
    """(status, body) of a real curl, never through a proxy."""
    done = subprocess.run(
        ["curl", "-s", "--noproxy", "*", "-w", "\n%{http_code}", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    body, status = done.stdout.rsplit("\n", 1)
    return int(status), body


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_dns_rebinding_reads_and_approves_nothing(dev: Dev) -> None:
    """A name the attacker controls, resolved to 127.0.0.1 (curl --resolve does what the
    rebound DNS answer does): the browser would treat it as the page's own origin."""
    run_id = waiting_refund(dev)
    port, aws_port = _port(dev.api), _port(dev.aws)
    decision = json.dumps({"approved": True, "edited_inputs": {"amount": 4242}})
    as_json = ["-H", "content-type: application/json"]
    for name in REBOUND:
        resolve = ["--resolve", f"{name}:{port}:127.0.0.1", "--resolve", f"{name}:{aws_port}:127.0.0.1"]  # fmt: skip
        api = f"http://{name}:{port}"
        for request in (
            [f"{api}/runs?limit=50"],
            [f"{api}/runs/{run_id}"],
            [f"{api}/"],
            ["-X", "POST", *as_json, "-d", decision, f"{api}/runs/{run_id}/approval"],
        ):
            status, body = curl(*resolve, *request)
            assert status == 403, (name, request, body)
            assert run_id not in body and json.loads(body)["field"] == "Host"
        status, body = curl(
            *resolve,
            *("-X", "POST", "-H", "X-Amz-Target: DynamoDB_20120810.Scan"),
            *("-H", "Content-Type: application/x-amz-json-1.0", "-d", json.dumps(SCAN)),
            f"http://{name}:{aws_port}/",
        )
        assert status == 403 and run_id not in body and "not a loopback name" in body, body
    assert_still_waiting(dev, run_id)
    # signed with the stack's own key, but sent to a rebound name: still refused
    forged = signed(dev.aws, SCAN, host=f"attacker.example:{aws_port}")
    assert forged.status_code == 403 and run_id not in forged.text and "Host" in forged.text


def test_forged_host_headers_are_refused_and_allowed_names_answered(dev: Dev) -> None:
    port, aws_port = _port(dev.api), _port(dev.aws)
    for host in [f"attacker.example:{port}", "attacker.example", f"127.0.0.1.nip.io:{port}", ""]:
        answer = httpx.get(f"{dev.api}/runs", headers={"Host": host}, timeout=10)
        assert answer.status_code == 403 and answer.json()["field"] == "Host", (host, answer.text)
    for name in (ALLOWED, ALLOWED_BY_ENV, "localhost"):  # a container's names, when allowed
        host = {"Host": f"{name}:{port}"}
        assert httpx.get(f"{dev.api}/agents", headers=host, timeout=10).status_code == 200
        assert signed(dev.aws, SCAN, host=f"{name}:{aws_port}").status_code == 200


def test_requests_a_page_sends_without_a_preflight_cannot_approve(dev: Dev) -> None:
    """fetch(url, {mode: "no-cors", method: "POST", body: new Blob([json])}) sends no
    Content-Type; a string body sends text/plain; a form, urlencoded or multipart."""
    run_id = waiting_refund(dev)
    decision = json.dumps({"approved": True, "edited_inputs": {"amount": 4242}})
    for path in (f"/runs/{run_id}/approval", f"/agents/billing/runs/{run_id}/approval"):
        for headers in ({}, {"Content-Type": "text/plain;charset=UTF-8"},
                        {"Content-Type": "application/x-www-form-urlencoded"}):  # fmt: skip
            answer = httpx.post(f"{dev.api}{path}", content=decision, headers=headers, timeout=10)
            assert answer.status_code == 415, answer.text
            assert answer.json()["field"] == "Content-Type"
            assert "application/json" in answer.json()["error_message"]
        form = httpx.post(f"{dev.api}{path}", files={"approved": ("a", b"true")}, timeout=10)
        assert form.status_code == 415, form.text
    for path in (f"/runs/{run_id}/cancel", f"/agents/billing/runs/{run_id}/cancel"):
        assert httpx.post(f"{dev.api}{path}", timeout=10).status_code == 415  # no body either
    assert_still_waiting(dev, run_id)
    # a JSON Content-Type with a body that is not JSON: a 400 that says so (issue 24)
    bad = httpx.post(
        f"{dev.api}/agents/billing/runs",
        content=b"input=refund me",
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    assert bad.status_code == 400 and bad.json()["field"] == "body"
    assert bad.json()["error_message"].startswith("body: not valid JSON")


def test_a_foreign_origin_is_refused_on_every_route(dev: Dev) -> None:
    run_id = waiting_refund(dev)
    params = {
        "agent": "billing",
        "run_id": run_id,
        "workflow": "w",
        "workflow_run_id": "w1",
        "session_id": "s1",
    }
    paths = [(r.method, r.path.format(**params)) for r in ROUTES]
    paths += [("GET", "/"), ("GET", "/console.js"), ("GET", "/runs?limit=5"),
              ("GET", f"/runs/{run_id}/stream"), ("GET", "/nowhere")]  # fmt: skip
    assert len(paths) == len(ROUTES) + 5
    own = dev.api
    for method, path in paths:
        for origin in ("http://127.0.0.2:8000", "http://localhost:" + str(_port(dev.api)), "null"):
            headers = {"Origin": origin, "Content-Type": "application/json"}
            body = b'{"approved": true}' if method == "POST" else None
            answer = httpx.request(
                method, f"{dev.api}{path}", headers=headers, content=body, timeout=10
            )
            assert answer.status_code == 403, (method, path, origin, answer.text)
            assert answer.json()["field"] == "Origin" and run_id not in answer.text
            assert not any(h.lower().startswith("access-control-") for h in answer.headers)
    assert_still_waiting(dev, run_id)
    same = httpx.get(f"{dev.api}/runs?limit=5", headers={"Origin": own}, timeout=10)
    assert same.status_code == 200 and run_id in same.text  # the console's own requests


def test_the_aws_endpoint_grants_no_page_and_wants_the_stacks_credentials(dev: Dev) -> None:
    run_id = waiting_refund(dev)
    preflight = httpx.options(
        f"{dev.aws}/",
        headers={
            "Origin": "http://127.0.0.2:8000",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type,x-amz-target",
        },
        timeout=10,
    )
    assert preflight.status_code == 403
    assert not any(h.lower().startswith("access-control-") for h in preflight.headers)
    unsigned = httpx.post(
        f"{dev.aws}/",
        content=json.dumps(SCAN),
        headers={"X-Amz-Target": "DynamoDB_20120810.Scan", "Content-Type": "text/plain"},
        timeout=10,
    )
    assert unsigned.status_code == 403 and run_id not in unsigned.text
    assert "sign the request" in unsigned.text
    assert httpx.get(f"{dev.aws}/moto-api/data.json", timeout=10).status_code == 403
    other = signed(dev.aws, SCAN, key="AKIAIOSFODNN7EXAMPLE")
    assert other.status_code == 403 and "not the dev stack's" in other.text
    from_page = signed(dev.aws, SCAN, Origin="http://127.0.0.2:8000")
    assert from_page.status_code == 403 and run_id not in from_page.text
    own = signed(dev.aws, SCAN)
    assert own.status_code == 200 and run_id in own.text  # the stack's own credentials
    s3 = boto3.client("s3", endpoint_url=dev.aws, region_name="us-east-1",
                      aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
    s3.put_object(Bucket="agentfn-local-data", Key="origin-test.txt", Body=b"shared")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "agentfn-local-data", "Key": "origin-test.txt"})  # fmt: skip
    assert httpx.get(url, timeout=10).text == "shared"  # a presigned URL: the stack's key too
    assert httpx.get(url.split("?")[0], timeout=10).status_code == 403
    assert not any(h.lower().startswith("access-control-") for h in own.headers)
    assert "AWS endpoint refused OPTIONS /" in dev.stderr.read_text()


def test_the_dev_api_issues_watch_tokens_signed_with_its_own_key(dev: Dev) -> None:
    """agentfn dev makes the stack's watch key in its own Secrets Manager, as deployed."""
    run_id = waiting_refund(dev)
    answer = httpx.get(f"{dev.api}/agents/billing/runs/{run_id}/watch-token", timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    assert answer.json()["run_id"] == run_id and answer.json()["token"].startswith("v1.")
    other = httpx.get(f"{dev.api}/agents/support/runs/{run_id}/watch-token", timeout=10)
    assert other.status_code == 404  # another agent's path: no token for billing's run
