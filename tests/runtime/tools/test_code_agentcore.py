"""code_execute on AgentCore Code Interpreter: a real botocore client whose requests are
answered on the wire (JSON, and the event stream of InvokeCodeInterpreter) by a fake service
that really runs the code it is sent — so the `result` epilogue is proven on Python and
JavaScript; one session per call, always stopped; errors and timeouts are answers; the
template grants the three session calls on the one interpreter and builds no sandbox."""

from __future__ import annotations

import asyncio
import json
import shutil
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.config import Config
from botocore.exceptions import ReadTimeoutError

from infra.sam import sandbox
from infra.sam.template import build_template
from runtime.spec import AgentfnSpec
from runtime.spec.sandbox import CodeExecuteSettings
from runtime.tools.base import ToolContext, ToolError
from runtime.tools.sandbox.runner import run_code
from runtime.tools.sandbox.tool import CODE_INTERPRETER_ENV, code_execute_tool
from tests.aws_eventstream import answer_with, event, exception, response
from tests.helpers import DEMO_SPEC, load_spec
from tests.infra.cfn import function_statements

CTX = ToolContext(run_id="r", session_id="s", agent="a", call_id="c")


class FakeInterpreter:
    """The three calls, answered as AgentCore documents them; the code really runs."""

    def __init__(self, fail: str | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.open: set[str] = set()
        self.fail = fail

    def __call__(self, request: AWSPreparedRequest) -> AWSResponse:
        parts = urlsplit(request.url)
        path, query = parts.path, parse_qs(parts.query)
        body = json.loads(request.body or b"{}")
        self.calls.append((path, body))
        if path.endswith("/sessions/start"):
            session = f"s-{len(self.calls)}"
            self.open.add(session)
            return response(request, json.dumps({"codeInterpreterIdentifier": "aws.codeinterpreter.v1", "sessionId": session, "createdAt": "2026-11-25T00:00:00Z"}).encode())  # fmt: skip
        if path.endswith("/sessions/stop"):
            self.open.discard(query["sessionId"][0])
            return response(request, json.dumps({"codeInterpreterIdentifier": "aws.codeinterpreter.v1", "sessionId": "x", "lastUpdatedAt": "2026-11-25T00:00:01Z"}).encode())  # fmt: skip
        assert request.headers["x-amzn-code-interpreter-session-id"].decode() in self.open
        if self.fail == "timeout":
            raise ReadTimeoutError(endpoint_url=request.url)
        if self.fail:
            return response(request, exception(self.fail, "the code interpreter is busy"), True)
        args = body["arguments"]
        ran = run_code(args["language"], args["code"], timeout=10, isolate=False)
        result = {
            "content": [{"type": "text", "text": ran["stdout"]}],
            "structuredContent": {
                "stdout": ran["stdout"], "stderr": ran["stderr"],
                "exitCode": ran["exit_code"], "executionTime": 0.01,
            },
            "isError": ran["exit_code"] != 0,
        }  # fmt: skip
        return response(request, event("result", result), stream=True)


def _tool(fake: FakeInterpreter) -> Any:
    client = boto3.client(
        "bedrock-agentcore",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 1}),
    )
    answer_with(client, fake)
    return code_execute_tool(CodeExecuteSettings(backend="agentcore"), lambda: None, lambda: client)


def _run(tool: Any, **arguments: Any) -> Any:
    return asyncio.run(tool.call(arguments, CTX))


def test_python_runs_on_agentcore_with_its_result_and_the_session_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CODE_INTERPRETER_ENV, "aws.codeinterpreter.v1")
    fake = FakeInterpreter()
    answer = _run(_tool(fake), language="python", code="print('hi')\nresult = {'n': 6 * 7}")
    assert answer["stdout"] == "hi\n" and answer["result"] == {"n": 42}
    assert answer["exit_code"] == 0 and answer["walls"] == ["agentcore"]
    paths = [path for path, _ in fake.calls]
    assert paths == [
        "/code-interpreters/aws.codeinterpreter.v1/sessions/start",
        "/code-interpreters/aws.codeinterpreter.v1/tools/invoke",
        "/code-interpreters/aws.codeinterpreter.v1/sessions/stop",
    ]
    assert fake.calls[1][1]["name"] == "executeCode" and not fake.open
    failed = _run(_tool(fake), language="python", code="raise ValueError('boom')")
    assert failed["exit_code"] == 1 and "ValueError: boom" in failed["stderr"]
    assert failed["result"] is None and not fake.open


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js to run the JavaScript")
def test_javascript_leaves_its_result_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CODE_INTERPRETER_ENV, "aws.codeinterpreter.v1")
    answer = _run(
        _tool(FakeInterpreter()), language="javascript", code="console.log('js'); result = [1, 2]"
    )
    assert answer["stdout"] == "js\n" and answer["result"] == [1, 2]


def test_a_stream_exception_is_an_error_and_the_session_is_still_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CODE_INTERPRETER_ENV, "aws.codeinterpreter.v1")
    fake = FakeInterpreter(fail="throttlingException")
    with pytest.raises(ToolError, match="busy"):
        _run(_tool(fake), language="python", code="result = 1")
    assert fake.calls[-1][0].endswith("/sessions/stop") and not fake.open


def _with_agentcore(identifier: str = "aws.codeinterpreter.v1") -> AgentfnSpec:
    data = load_spec(DEMO_SPEC).to_compiled()
    data["agents"]["analyst"]["tools"].append("builtin:code_execute")
    data["code_execute"] = {"backend": "agentcore", "code_interpreter_id": identifier}
    return AgentfnSpec.model_validate(data)


def test_the_template_grants_that_interpreter_alone_and_builds_no_sandbox() -> None:
    resources = build_template(_with_agentcore())["Resources"]  # no VPC needed
    assert sandbox.SANDBOX not in resources and sandbox.SANDBOX_ROLE not in resources
    analyst = resources["AgentAnalystFunction"]["Properties"]
    assert analyst["Environment"]["Variables"]["AGENTFN_CODE_INTERPRETER"] == (
        "aws.codeinterpreter.v1"
    )
    grant = json.dumps(function_statements(resources, "AgentAnalystFunction"))
    assert "RunCodeInAgentCore" in grant and ":aws:code-interpreter/aws.codeinterpreter.v1" in grant
    for name, resource in resources.items():
        if name.endswith(("Function", "FunctionRole")) and not name.startswith("AgentAnalyst"):
            assert "bedrock-agentcore" not in json.dumps(resource), name
    mine = json.dumps(build_template(_with_agentcore("mine_ci-0123456789"))["Resources"])
    assert "${AWS::AccountId}:code-interpreter-custom/mine_ci-0123456789" in mine
    with pytest.raises(ValueError, match="code_interpreter_id"):
        _with_agentcore("../../other")


def test_code_that_outlives_the_read_timeout_is_answered_timed_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CODE_INTERPRETER_ENV, "aws.codeinterpreter.v1")
    fake = FakeInterpreter(fail="timeout")
    answer = _run(_tool(fake), language="python", code="while True: pass")
    assert answer["timed_out"] and answer["exit_code"] is None and not fake.open
