"""code_execute on Amazon Bedrock AgentCore Code Interpreter (`code_execute.backend:
agentcore`): one session per call — started, given the code (`executeCode`), stopped — so
no state or file leaks from one call (or one run) to the next.

AgentCore answers stdout, stderr and an exit code; the value the code leaves in `result` is
printed after the code on a marked last line, and taken back off stdout here, so the answer
has the same shape as the local runner's."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from runtime.tools.base import ToolError

MARKER = "\x1eagentfn-result\x1e"
OUTPUT_CHARS = 100_000
_EPILOGUE = {
    "python": (
        "\n\ntry:\n    import json as _agentfn_json\n"
        f"    print({MARKER!r} + _agentfn_json.dumps(result, default=repr))\n"
        "except NameError:\n    pass\n"
    ),
    "javascript": (
        "\n;if (typeof result !== 'undefined') "
        f"console.log({json.dumps(MARKER)} + JSON.stringify(result));\n"
    ),
}


def _split_result(stdout: str) -> tuple[str, Any]:
    head, found, tail = stdout.rpartition(MARKER)
    if not found:
        return stdout, None
    value, _, rest = tail.partition("\n")
    try:
        result = json.loads(value)
    except ValueError:
        result = None
    return head + rest, result


def _read_stream(stream: Any) -> dict[str, Any]:
    for event in stream:
        if "result" in event:
            return dict(event["result"])
        for kind, detail in event.items():  # the stream's own exceptions
            message = (detail or {}).get("message", "") if isinstance(detail, dict) else ""
            raise ToolError(f"AgentCore Code Interpreter failed ({kind}): {message[:300]}")
    raise ToolError("AgentCore Code Interpreter ended without a result")


def run_on_agentcore(
    client: Any, identifier: str, language: str, code: str, timeout: float
) -> dict[str, Any]:
    """{exit_code, signal, timed_out, stdout, stderr, result, walls}, like the local runner."""
    from botocore.exceptions import BotoCoreError, ClientError, ReadTimeoutError

    try:
        session = client.start_code_interpreter_session(
            codeInterpreterIdentifier=identifier,
            name="agentfn-code-execute",
            sessionTimeoutSeconds=int(timeout) + 60,
        )["sessionId"]
    except (BotoCoreError, ClientError) as exc:
        raise ToolError(f"AgentCore Code Interpreter could not start a session: {exc}") from None
    timed_out = False
    try:
        answer = client.invoke_code_interpreter(
            codeInterpreterIdentifier=identifier,
            sessionId=session,
            name="executeCode",
            arguments={"code": code + _EPILOGUE[language], "language": language},
        )
        result = _read_stream(answer["stream"])
    except ReadTimeoutError:
        timed_out, result = True, {}
    except (BotoCoreError, ClientError) as exc:
        raise ToolError(f"AgentCore Code Interpreter could not run the code: {exc}") from None
    finally:
        # a session left open would run (and bill) until its own timeout
        with contextlib.suppress(BotoCoreError, ClientError):
            client.stop_code_interpreter_session(
                codeInterpreterIdentifier=identifier, sessionId=session
            )
    content = result.get("structuredContent") or {}
    stdout, value = _split_result(str(content.get("stdout") or ""))
    stderr = str(content.get("stderr") or "")
    if not stdout and not stderr and result.get("isError"):  # an error told only as text
        stderr = "\n".join(str(part.get("text", "")) for part in result.get("content") or [])
    exit_code = content.get("exitCode")
    if exit_code is None and not timed_out:
        exit_code = 1 if result.get("isError") else 0
    return {
        "exit_code": exit_code,
        "signal": None,
        "timed_out": timed_out,
        "stdout": stdout[:OUTPUT_CHARS],
        "stderr": stderr[:OUTPUT_CHARS],
        "result": value,
        "walls": ["agentcore"],
    }
