"""code_execute's sandbox under attack: an infinite loop, a fork bomb, a memory bomb, reading
the host's environment and files, opening a socket — each contained, with a clear answer.
Then the tool (locally and through the deployed sandbox function's handler) and the
template (a role with no policy, a VPC required, the grant on the agents that use it)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from infra.sam import sandbox
from infra.sam.template import build_template
from runtime.spec import AgentfnSpec
from runtime.spec.sandbox import CodeExecuteSettings
from runtime.tools.base import ToolContext, ToolError
from runtime.tools.sandbox.runner import UID_COUNT, UID_FIRST, can_isolate, run_code
from runtime.tools.sandbox.tool import SANDBOX_FUNCTION_ENV, code_execute_tool
from tests.helpers import DEMO_SPEC, load_spec

needs_isolation = pytest.mark.skipif(
    not can_isolate(), reason="namespaces and a uid of the call's own need Linux as root"
)


def test_python_and_javascript_answer_output_exit_code_and_result() -> None:
    python = run_code("python", "print('hi')\nresult = {'sum': 1 + 2}")
    assert (python["stdout"], python["exit_code"], python["result"]) == ("hi\n", 0, {"sum": 3})
    js = run_code("javascript", "console.log(6 * 7); result = [1, 'two']")
    assert (js["stdout"], js["result"]) == ("42\n", [1, "two"])
    failing = run_code("python", "raise SystemExit(3)")
    assert failing["exit_code"] == 3
    assert "error" in run_code("ruby", "puts 1")


def test_an_infinite_loop_is_stopped_at_its_timeout() -> None:
    started = time.monotonic()
    answer = run_code("python", "while True:\n    pass", timeout=1.5)
    assert answer["timed_out"] or answer["signal"] in ("SIGKILL", "SIGXCPU")
    assert time.monotonic() - started < 6
    js = run_code("javascript", "while (true) {}", timeout=1.5)
    assert js["timed_out"] or js["signal"] is not None


def test_a_memory_bomb_fails_inside_the_sandbox() -> None:
    answer = run_code("python", "block = bytearray(4 * 1024 ** 3)", memory_mb=128)
    assert answer["exit_code"] != 0 and "MemoryError" in answer["stderr"]


@needs_isolation
def test_a_fork_bomb_is_contained_and_leaves_nothing_running() -> None:
    bomb = "import os\nprint(os.getuid(), flush=True)\nwhile True:\n    os.fork()"
    answer = run_code("python", bomb, timeout=3)
    assert answer["exit_code"] != 0 or answer["timed_out"]
    uid = int(answer["stdout"].split()[0])  # the call's own uid, which no one else has
    assert UID_FIRST <= uid < UID_FIRST + UID_COUNT
    time.sleep(0.3)
    assert str(uid) not in os.popen("ps -eo uid=").read().split()


@needs_isolation
def test_the_hosts_secrets_files_and_network_are_out_of_reach(tmp_path: Path) -> None:
    os.environ["AGENTFN_TEST_SECRET"] = "sk-live-do-not-leak"
    try:
        env = run_code("python", "import os\nresult = dict(os.environ)")
    finally:
        del os.environ["AGENTFN_TEST_SECRET"]
    assert "sk-live-do-not-leak" not in json.dumps(env) and set(env["result"]) <= {
        "PATH",
        "HOME",
        "LANG",
    }
    private = tmp_path / "private.txt"
    private.write_text("host data")
    private.chmod(0o600)
    tmp_path.chmod(0o700)
    read = run_code("python", f"print(open({str(private)!r}).read())")
    assert read["exit_code"] != 0 and "FileNotFoundError" in read["stderr"]  # not even there
    net = run_code("python", "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)")
    assert net["exit_code"] != 0 and "unreachable" in net["stderr"].lower()
    loopback = run_code(
        "python", "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=2)"
    )
    assert loopback["exit_code"] != 0  # the namespace's own loopback is down, and empty
    assert {"network", "filesystem", "user"} <= set(run_code("python", "print(1)")["walls"])


CTX = ToolContext(run_id="r", session_id="s", agent="a", call_id="c")


class _SandboxFunction:
    """A Lambda client whose one function is the deployed sandbox handler."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def invoke(self, FunctionName: str, Payload: bytes) -> dict[str, Any]:
        from handlers.sandbox import handler

        self.calls.append(FunctionName)
        answer = handler(json.loads(Payload), None)
        return {"Payload": io.BytesIO(json.dumps(answer).encode())}


def test_the_tool_runs_locally_or_in_the_sandbox_function(monkeypatch: pytest.MonkeyPatch) -> None:
    client = _SandboxFunction()
    tool = code_execute_tool(CodeExecuteSettings(timeout=5), lambda: client)
    local = asyncio.run(tool.call({"language": "python", "code": "result = 7 * 6"}, CTX))
    assert local["result"] == 42 and client.calls == []
    monkeypatch.setenv(SANDBOX_FUNCTION_ENV, "agentfn-x-code-sandbox")
    deployed = asyncio.run(
        tool.call({"language": "python", "code": "result = 'there'", "timeout": 99}, CTX)
    )
    assert deployed["result"] == "there" and client.calls == ["agentfn-x-code-sandbox"]
    for bad in ({"language": "cobol", "code": "x"}, {"language": "python", "code": " "}):
        with pytest.raises(ToolError):
            asyncio.run(tool.call(bad, CTX))


def test_the_sandbox_function_leaves_an_empty_tmp_to_its_next_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In Lambda (no root, so no private /tmp per call) one warm instance serves call after
    call: what one call writes to /tmp must not be there for the next."""
    from handlers.sandbox import handler

    lambda_tmp = tmp_path / "lambda-tmp"
    lambda_tmp.mkdir()
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "agentfn-x-code-sandbox")
    monkeypatch.setenv("TMPDIR", str(lambda_tmp))
    monkeypatch.setattr("runtime.tools.sandbox.runner.can_isolate", lambda: False)
    write = (
        f"import os\nos.makedirs({str(lambda_tmp / 'cache')!r})\n"
        f"open({str(lambda_tmp / 'planted.py')!r}, 'w').write('x')\nresult = 'written'"
    )
    assert handler({"language": "python", "code": write, "timeout": 5}, None)["result"] == "written"
    look = f"import os\nresult = os.listdir({str(lambda_tmp)!r})"
    assert handler({"language": "python", "code": look, "timeout": 5}, None)["result"] == []


def _with_code_execute(**settings: Any) -> AgentfnSpec:
    data = load_spec(DEMO_SPEC).to_compiled()
    data["agents"]["analyst"]["tools"].append("builtin:code_execute")
    data["code_execute"] = {**data["code_execute"], **settings}
    return AgentfnSpec.model_validate(data)


def test_the_template_has_a_sandbox_with_no_permissions_in_a_vpc() -> None:
    assert sandbox.SANDBOX not in build_template(load_spec(DEMO_SPEC))["Resources"]
    with pytest.raises(ValueError, match="subnet_ids"):
        build_template(_with_code_execute())
    resources = build_template(
        _with_code_execute(subnet_ids=["subnet-1"], security_group_ids=["sg-1"])
    )["Resources"]
    role = resources[sandbox.SANDBOX_ROLE]["Properties"]
    assert "Policies" not in role and "ManagedPolicyArns" not in role
    function = resources[sandbox.SANDBOX]["Properties"]
    assert function["VpcConfig"] == {"SubnetIds": ["subnet-1"], "SecurityGroupIds": ["sg-1"]}
    analyst = resources["AgentAnalystFunction"]["Properties"]
    assert "AGENTFN_SANDBOX_FUNCTION" in analyst["Environment"]["Variables"]
    for name, resource in resources.items():
        grants = json.dumps(resource.get("Properties", {}).get("Policies", []))
        assert ("RunCodeInTheSandbox" in grants) == (name == "AgentAnalystFunctionRole"), name
