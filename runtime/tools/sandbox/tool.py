"""`code_execute(language, code, timeout?)`: Python or JavaScript in the sandbox — locally a
walled-off child process (runtime.tools.sandbox.runner), deployed the stack's sandbox
function (no IAM permissions, no network), invoked by the agent's function, or Amazon
Bedrock AgentCore Code Interpreter (`backend: agentcore`; runtime.tools.sandbox.agentcore).
Which one is the deployment's choice, read from the function's environment: the embedded
AWS of `agentfn run`/`dev` emulates neither, so locally the runner always answers."""

from __future__ import annotations

import asyncio
import functools
import json
import os
from collections.abc import Callable
from typing import Any

from runtime.spec.plain import CodeExecuteSettings
from runtime.tools.base import FunctionTool, ToolContext, ToolError

SANDBOX_FUNCTION_ENV = "AGENTFN_SANDBOX_FUNCTION"
CODE_INTERPRETER_ENV = "AGENTFN_CODE_INTERPRETER"


def _agentcore_client(settings: CodeExecuteSettings) -> Any:
    import boto3
    from botocore.config import Config

    # AgentCore takes no per-call time limit: the read timeout is the code's
    return boto3.client(
        "bedrock-agentcore",
        config=Config(read_timeout=settings.timeout + 15, retries={"mode": "standard"}),
    )


def code_execute_tool(
    settings: CodeExecuteSettings,
    lambda_client: Callable[[], Any],
    agentcore_client: Callable[[], Any] | None = None,
) -> FunctionTool:
    @functools.cache
    def agentcore() -> Any:  # made on the first AgentCore call, then reused
        return agentcore_client() if agentcore_client else _agentcore_client(settings)

    async def execute(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        from runtime.tools.sandbox.runner import run_code

        language, code = arguments.get("language"), arguments.get("code")
        if language not in ("python", "javascript"):
            raise ToolError("language is python or javascript")
        if not isinstance(code, str) or not code.strip():
            raise ToolError("code must be non-empty text")
        timeout = arguments.get("timeout", settings.timeout)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ToolError("timeout is a number of seconds")
        request = {
            "language": language,
            "code": code,
            "timeout": min(float(timeout), settings.timeout),
            "memory_mb": settings.memory_mb,
        }
        interpreter = os.environ.get(CODE_INTERPRETER_ENV)
        if interpreter:
            from runtime.tools.sandbox.agentcore import run_on_agentcore

            return await asyncio.to_thread(
                run_on_agentcore, agentcore(), interpreter, language, code, request["timeout"]
            )
        function = os.environ.get(SANDBOX_FUNCTION_ENV)
        if function:
            return await asyncio.to_thread(_invoke, lambda_client(), function, request)
        return await asyncio.to_thread(run_code, **request)

    return FunctionTool(
        name="code_execute",
        description=(
            "Run Python or JavaScript in an isolated sandbox (no network, no files of yours, "
            "limited CPU time and memory) and get its stdout, stderr, exit code and the JSON "
            f"value left in a variable named `result`. Timeout: up to {int(settings.timeout)} s."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "language": {"type": "string", "enum": ["python", "javascript"]},
                "code": {"type": "string"},
                "timeout": {"type": "number", "exclusiveMinimum": 0},
            },
            "required": ["language", "code"],
        },
        func=execute,
        effect="idempotent",  # nothing leaves the sandbox: running it again is harmless
        cache_outputs=True,
    )


def _invoke(client: Any, function: str, request: dict[str, Any]) -> Any:
    answer = client.invoke(FunctionName=function, Payload=json.dumps(request).encode())
    payload = json.loads(answer["Payload"].read() or b"null")
    if answer.get("FunctionError"):
        message = (payload or {}).get("errorMessage", "the sandbox failed")
        raise ToolError(f"the sandbox could not run the code: {str(message)[:300]}")
    return payload
