"""`type: lambda` tools: a synchronous Lambda invoke with an idempotency key.

The function receives `{tool, arguments, idempotency_key, run_id}` and its return value is
the output. A function error (an unhandled exception in it) becomes a tool error the model
can read; the template grants `lambda:InvokeFunction` on exactly these functions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from runtime.spec.plain import LambdaTool
from runtime.tools.base import FunctionTool, RichOutput, ToolContext, ToolError
from runtime.tools.threads import DEFAULT_PARALLELISM, pool, run_blocking

#: What a local run lacks when boto3 cannot even sign the invoke (by botocore's error name).
_HINTS = {
    "NoRegionError": " (set AWS_REGION or AWS_DEFAULT_REGION)",
    "NoCredentialsError": (
        " (set AWS_PROFILE to a configured profile, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
    ),
}


def lambda_tool(
    name: str,
    config: LambdaTool,
    client: Callable[[], Any],
    threads: Executor | None = None,
) -> FunctionTool:
    """`client` returns a boto3 Lambda client (created on first use, reused after); the
    invoke blocks, in `threads` (the agent's pool, runtime.tools.threads)."""
    executor = threads or pool("", DEFAULT_PARALLELISM)
    region = config.function_arn.split(":")[3]
    regional: list[Any] = []  # a client of the function's own region, made once if needed

    def in_region() -> Any:
        """Lambda answers an ARN only in its own region: the given client when it is there,
        else one made for that region (with the same credentials chain and endpoints)."""
        if regional:
            return regional[0]
        try:
            given = client()
        except Exception as exc:  # no default region: the ARN names one
            if type(exc).__name__ != "NoRegionError":
                raise
            given = None
        if given is not None and given.meta.region_name == region:
            return given
        import boto3

        regional.append(boto3.client("lambda", region_name=region))
        return regional[0]

    def invoke(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        payload = {
            "tool": name,
            "arguments": arguments,
            "idempotency_key": ctx.idempotency_key,
            "run_id": ctx.run_id,
        }
        try:
            answer = in_region().invoke(
                FunctionName=config.function_arn,
                InvocationType="RequestResponse",
                Payload=json.dumps(payload).encode(),
            )
        except Exception as exc:  # botocore errors: throttling, missing function, access
            hint = _HINTS.get(type(exc).__name__, "")
            raise ToolError(f"could not invoke {name}: {type(exc).__name__}: {exc}{hint}") from None
        body = answer["Payload"].read().decode("utf-8", errors="replace")
        try:
            result: Any = json.loads(body) if body else None
        except json.JSONDecodeError:
            result = body
        if answer.get("FunctionError"):
            detail = result if isinstance(result, dict) else {"errorMessage": str(result)}
            message = f"{detail.get('errorType', 'Error')}: {detail.get('errorMessage', '')}"
            return RichOutput(text=f"the function failed: {message}", full=result, is_error=True)
        return result

    async def call(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        return await run_blocking(executor, invoke, arguments, ctx)  # boto3 blocks

    return FunctionTool(
        name=name,
        description=config.description,
        input_schema=config.input_schema or {"type": "object"},
        func=call,
        effect=config.effect,
        timeout=config.timeout,
        max_chars=config.max_chars,
        cache_outputs=True,
        reuse_cached=config.cache_reuse and config.effect == "read_only",
    )
