"""`type: http` tools and the `http_request` builtin against a real loopback server: URL
filling, query vs JSON body, secrets (resolved, sent, never shown), the idempotency key,
error statuses, timeouts and network failures."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.spec.tools import HttpTool
from runtime.tools.base import FunctionTool, RichOutput, ToolContext, ToolError
from runtime.tools.http_tool import fill_url, http_request_tool, http_tool
from runtime.tools.ssrf import SsrfBlocked
from tests.runtime.tools.local_http import LocalServer, install_fake_dns, serve, unused_port

CTX = ToolContext("run-1", "sess-1", "agent", "call-1")
SECRET = "s3cret"


def secrets(text: str) -> str:
    return text.replace("${secret:tok}", SECRET)


@pytest.fixture(autouse=True)
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_dns(monkeypatch)


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with serve() as running:
        yield running


def make_tool(url: str, **config: Any) -> FunctionTool:
    config.setdefault("allow_private", ["127.0.0.1"])
    spec = HttpTool.model_validate(
        {"type": "http", "description": "test tool", "url": url, **config}
    )
    return http_tool("crm", spec, secrets)


def call(tool: FunctionTool, arguments: dict[str, Any], ctx: ToolContext = CTX) -> RichOutput:
    output = asyncio.run(tool.call(arguments, ctx))
    assert isinstance(output, RichOutput)
    return output


def test_path_params_are_filled_and_url_encoded(server: LocalServer) -> None:
    tool = make_tool(server.url + "/accounts/{customer_id}/orders/{order}")
    output = call(tool, {"customer_id": "a b/c?d#e", "order": 42})
    assert output.full["body"]["path"] == "/accounts/a%20b%2Fc%3Fd%23e/orders/42"
    assert server.requests[0].query == {}


def test_dot_segments_cannot_escape_the_template_path(server: LocalServer) -> None:
    tool = make_tool(server.url + "/accounts/{customer_id}/profile")
    call(tool, {"customer_id": ".."})
    assert server.requests[0].path == "/accounts/%2E%2E/profile"


def test_fill_url_keeps_literal_braces_and_reports_missing_arguments() -> None:
    url, rest = fill_url("http://x/{a}/{{b}}", {"a": "1", "q": 2})
    assert (url, rest) == ("http://x/1/{b}", {"q": 2})
    with pytest.raises(ToolError, match="missing URL argument"):
        fill_url("http://x/{a}", {})


def test_default_schema_requires_each_url_param(server: LocalServer) -> None:
    tool = make_tool(server.url + "/a/{x}/{y}/{x}")
    assert tool.input_schema == {
        "type": "object",
        "properties": {"x": {"type": "string"}, "y": {"type": "string"}},
        "required": ["x", "y"],
    }
    given = {"type": "object", "properties": {"q": {"type": "string"}}}
    assert make_tool(server.url + "/s", input_schema=given).input_schema == given


def test_tool_fields_follow_the_config(server: LocalServer) -> None:
    tool = make_tool(server.url + "/x", effect="idempotent", timeout=7)
    assert (tool.effect, tool.timeout, tool.max_chars) == ("idempotent", 7, 10_000)
    assert tool.cache_outputs and not tool.reuse_cached and not tool.destructive
    assert tool.description == "test tool"
    assert make_tool(server.url + "/x", max_chars=500).max_chars == 500


def test_get_sends_remaining_arguments_as_query(server: LocalServer) -> None:
    tool = make_tool(server.url + "/search/{kind}?fixed=1")
    call(tool, {"kind": "acct", "q": "x y", "n": 3, "flag": True, "tags": ["a", "b"], "skip": None})
    [seen] = server.requests
    assert seen.method == "GET" and seen.path == "/search/acct"
    assert seen.query == {
        "fixed": ["1"],
        "q": ["x y"],
        "n": ["3"],
        "flag": ["true"],
        "tags": ["a", "b"],
    }
    assert seen.body == b""


def test_post_sends_remaining_arguments_as_a_json_body(server: LocalServer) -> None:
    tool = make_tool(server.url + "/accounts/{id}/notes", method="POST")
    call(tool, {"id": "7", "text": "hi", "pinned": True, "meta": {"k": [1, 2]}})
    [seen] = server.requests
    assert seen.method == "POST" and seen.path == "/accounts/7/notes" and seen.query == {}
    assert seen.headers["content-type"] == "application/json"
    assert json.loads(seen.body) == {"text": "hi", "pinned": True, "meta": {"k": [1, 2]}}


def test_args_in_overrides_the_method_default(server: LocalServer) -> None:
    call(make_tool(server.url + "/q", method="POST", args_in="query"), {"a": "1"})
    call(make_tool(server.url + "/b", method="DELETE", args_in="body"), {"a": "1"})
    first, second = server.requests
    assert first.query == {"a": ["1"]} and first.body == b""
    assert second.method == "DELETE" and json.loads(second.body) == {"a": "1"}


def test_secret_headers_are_sent_but_never_shown(server: LocalServer) -> None:
    tool = make_tool(
        server.url + "/echo-headers",
        headers={"Authorization": "Bearer ${secret:tok}", "X-Plain": "visible"},
    )
    output = call(tool, {})
    [seen] = server.requests
    assert seen.headers["authorization"] == f"Bearer {SECRET}"
    assert seen.headers["x-plain"] == "visible"
    assert SECRET not in output.text and SECRET not in json.dumps(output.full)
    assert output.full["body"]["headers"]["authorization"] == "Bearer [redacted]"
    errored = call(tool, {"status": "500"})
    assert errored.is_error and SECRET not in errored.text + json.dumps(errored.full)


#: `"` and a backslash change under JSON escaping, `/` under some servers' JSON, `&` in URLs.
QUOTED_SECRET = 'k3y"with\\back/slash&quote'


def quoted_secrets(text: str) -> str:
    return text.replace("${secret:tok}", QUOTED_SECRET)


def spellings_of_quoted_secret() -> list[str]:
    once = json.dumps(QUOTED_SECRET)[1:-1]
    return [QUOTED_SECRET, once, once.replace("/", "\\/"), json.dumps(once)[1:-1]]


@pytest.mark.parametrize("status", ["200", "500"])
@pytest.mark.parametrize("content", ["json", "text"])
def test_a_secret_echoed_back_is_redacted_in_every_spelling(
    server: LocalServer, status: str, content: str
) -> None:
    """The server echoes the request headers as JSON (parsed by the tool, or left as text),
    in a success and in an error: the secret arrives JSON-escaped, not as sent."""
    spec = HttpTool.model_validate(
        {
            "type": "http",
            "description": "echo",
            "url": server.url + "/echo-headers",
            "headers": {"X-Api-Key": "${secret:tok}", "X-Plain": "visible"},
            "allow_private": ["127.0.0.1"],
        }
    )
    tool = http_tool("crm", spec, quoted_secrets)
    output = call(tool, {"status": status, "as": content})
    assert server.requests[0].headers["x-api-key"] == QUOTED_SECRET
    assert output.is_error is (status == "500")
    shown = [output.text, json.dumps(output.full), json.dumps(output.full, ensure_ascii=False)]
    for spelling in spellings_of_quoted_secret():
        for where in shown:
            assert spelling not in where
    assert "[redacted]" in output.text and "visible" in output.text
    if content == "json":
        assert output.full["body"]["headers"]["x-api-key"] == "[redacted]"


def test_secrets_are_absent_from_network_errors() -> None:
    port = unused_port()
    tool = make_tool(f"http://127.0.0.1:{port}/x", headers={"Authorization": "${secret:tok}"})
    with pytest.raises(ToolError) as caught:
        call(tool, {})
    assert (
        str(caught.value)
        == f"GET http://127.0.0.1:{port}/x: connection refused by 127.0.0.1:{port}"
    )
    assert SECRET not in str(caught.value)


def test_idempotency_key_and_user_agent(server: LocalServer) -> None:
    tool = make_tool(server.url + "/x", method="PUT", headers={"User-Agent": "spoof"})
    call(tool, {}, ToolContext("run-1", "sess-1", "agent", "call-77"))
    [seen] = server.requests
    assert seen.headers["idempotency-key"] == "run-1:call-77"  # unique across runs
    assert seen.headers["user-agent"] == "agentfn"


def test_json_bodies_are_parsed_and_reserialised_compactly(server: LocalServer) -> None:
    output = call(make_tool(server.url + "/data"), {"q": "1"})
    assert not output.is_error
    assert output.full["status"] == 200
    assert output.full["headers"] == {"content-type": "application/json"}
    assert output.full["body"]["query"] == {"q": ["1"]}
    assert output.text == json.dumps(output.full["body"], separators=(",", ":"))


def test_text_bodies_stay_text(server: LocalServer) -> None:
    output = call(make_tool(server.url + "/text"), {})
    assert output.text == "hello, wörld"
    assert output.full == {
        "status": 200,
        "headers": {"content-type": "text/plain; charset=utf-8"},
        "body": "hello, wörld",
    }


@pytest.mark.parametrize("status", [404, 500])
def test_error_statuses_are_tool_described_errors(server: LocalServer, status: int) -> None:
    output = call(make_tool(server.url + f"/status/{status}"), {})
    assert output.is_error
    assert output.text.startswith(f"HTTP {status}: ")
    assert output.full["body"] == {"error": "nope", "status": status}


def test_head_has_no_body(server: LocalServer) -> None:
    output = call(make_tool(server.url + "/x", method="HEAD"), {})
    assert output.text == "HTTP 200 OK (empty body)"
    assert server.requests[0].method == "HEAD"


def test_the_configured_timeout_applies_to_the_client(server: LocalServer) -> None:
    tool = make_tool(server.url + "/sleep", timeout=0.3)
    with pytest.raises(ToolError, match=r"GET .*/sleep timed out after 0.3s \(ReadTimeout\)"):
        call(tool, {"s": "2"})


def test_without_allow_private_the_server_is_never_reached(server: LocalServer) -> None:
    tool = make_tool(server.url + "/x", allow_private=[])
    with pytest.raises(SsrfBlocked, match=re.escape("refused: 127.0.0.1 is a loopback address")):
        call(tool, {})
    assert server.requests == []


def test_http_request_happy_path(server: LocalServer) -> None:
    tool = http_request_tool(allow_private=["127.0.0.1"])
    assert tool.name == "http_request" and tool.effect == "at_most_once"
    assert tool.cache_outputs and tool.max_chars == 10_000
    output = call(
        tool,
        {
            "url": server.url + "/thing?a=1",
            "method": "POST",
            "headers": {"X-T": "1"},
            "body": {"k": "v"},
        },
    )
    assert output.full["body"]["method"] == "POST"
    assert output.full["body"]["query"] == {"a": ["1"]}
    [seen] = server.requests
    assert json.loads(seen.body) == {"k": "v"}
    assert seen.headers["x-t"] == "1" and seen.headers["idempotency-key"] == "run-1:call-1"
    call(tool, {"url": server.url + "/raw", "method": "PUT", "body": "plain text"})
    assert server.requests[1].body == b"plain text"
    default = call(tool, {"url": server.url + "/get"})
    assert default.full["body"]["method"] == "GET"


def test_http_request_is_guarded_by_default(server: LocalServer) -> None:
    with pytest.raises(SsrfBlocked):
        call(http_request_tool(), {"url": server.url + "/x"})
    with pytest.raises(SsrfBlocked):
        call(http_request_tool(), {"url": "file:///etc/passwd"})
    assert server.requests == []


def test_post_put_and_patch_send_json_by_default(server: LocalServer) -> None:
    """Seed 004 (issue 25): an HTTP tool's arguments go as a JSON body for the methods that
    carry one, and the `http_request` builtin sends a JSON-text string body as JSON."""
    for method in ("POST", "PUT", "PATCH"):
        call(make_tool(server.url + "/m", method=method), {"a": 1})
    for seen, method in zip(server.requests, ("POST", "PUT", "PATCH"), strict=True):
        assert seen.method == method and seen.headers["content-type"] == "application/json"
        assert json.loads(seen.body) == {"a": 1} and seen.query == {}
    tool = http_request_tool(allow_private=["127.0.0.1"])
    call(tool, {"url": server.url + "/s", "method": "POST", "body": '{"k": [1]}'})
    call(tool, {"url": server.url + "/t", "method": "POST", "body": "{not json"})
    as_json, as_text = server.requests[3:]
    assert as_json.headers["content-type"] == "application/json" and as_json.body == b'{"k": [1]}'
    assert as_text.headers.get("content-type") != "application/json"
