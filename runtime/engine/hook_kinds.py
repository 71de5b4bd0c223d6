"""The hook protocol and the three kinds of hook that are asked: `http`, `python`, `lambda`.

Each is sent the same JSON payload, `{"event", "agent", "run_id", "session_id", ...}` plus
`tool` (pre/post_tool_use), `result` (post_tool_use), `response` (pre_response,
on_run_complete) or `input` (on_run_start), and answers
`{"decision": "allow" | "deny" | "modify", "reason": ..., "arguments" | "result" |
"response": ...}`. `parse_answer` holds every answer to that: anything else is a hook
failure, which the engine turns into allow (fail open) or deny (`on_error: deny`).

Reuse over new code: an http hook goes through the HTTP tools' `perform` (SSRF guard on
every connection, credentials dropped on a cross-origin redirect, secrets resolved at call
time and redacted from what comes back), a python hook resolves its handler exactly like a
python tool (inside the tools package only), a lambda hook invokes through the engine's
Lambda client like a Lambda tool. httpx is imported only when an http hook is asked.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from runtime.spec.plain import HookConfig, HttpHook, LambdaHook, PythonHook
from runtime.spec.shared import BLOCKING_EVENTS, MODIFIES
from runtime.tools.base import ToolContext, ToolError

Decision = Literal["allow", "deny", "modify"]


class HookFailure(Exception):
    """The hook could not be asked, or its answer was unusable (the message says which)."""


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reason: str | None = None
    value: Any = None  # the replacement, for `modify`


ALLOW = Verdict("allow")


def parse_answer(event: str, answer: Any) -> Verdict:
    """A hook's answer, held to the protocol. `None` (a python hook that returns nothing,
    an HTTP 204) is `allow`."""
    if answer is None:
        return ALLOW
    if not isinstance(answer, dict):
        raise HookFailure(f"the answer is not a JSON object: {_short(answer)}")
    decision = answer.get("decision")
    if decision not in ("allow", "deny", "modify"):
        raise HookFailure(f"`decision` must be allow, deny or modify, got {_short(decision)}")
    reason = answer.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise HookFailure("`reason` must be a string")
    if decision == "deny" and event not in BLOCKING_EVENTS:
        raise HookFailure(f"{event} hooks cannot deny")
    if decision != "modify":
        return Verdict(decision, reason)
    key = MODIFIES.get(event)
    if key is None:
        raise HookFailure(f"{event} hooks cannot modify")
    if key not in answer:
        raise HookFailure(f"a modify answer needs `{key}`")
    value = answer[key]
    if key == "arguments" and not isinstance(value, dict):
        raise HookFailure("`arguments` must be a JSON object")
    return Verdict("modify", reason, value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "…"


@dataclass
class Asking:
    """What asking a hook needs from the engine: how to resolve `${secret:…}` in headers,
    the Lambda client, the tools package, and the key the call is made under (sent as
    `Idempotency-Key`: the run, the event and the call, never reused)."""

    secrets: Callable[[str], str]
    lambda_client: Callable[[], Any]
    package: str
    run_id: str
    session_id: str
    agent: str
    key: str


async def ask(hook: HookConfig, payload: dict[str, Any], how: Asking) -> Any:
    """The hook's raw answer (JSON-able), within its timeout; HookFailure otherwise."""
    if not isinstance(hook, HttpHook | PythonHook | LambdaHook):
        raise HookFailure(f"a {hook.type} hook is evaluated, not asked")
    timeout = hook.timeout
    try:
        async with asyncio.timeout(timeout):
            if isinstance(hook, HttpHook):
                return await _ask_http(hook, payload, how, timeout)
            if isinstance(hook, PythonHook):
                return await _ask_python(hook, payload, how)
            return await asyncio.to_thread(_ask_lambda, hook, payload, how)
    except TimeoutError:
        raise HookFailure(f"no answer within {timeout:g}s") from None
    except HookFailure:
        raise
    except ToolError as exc:  # the HTTP tool's network failures, SSRF refusals
        raise HookFailure(str(exc)) from None
    except Exception as exc:  # a hook's bug is a hook failure, never the run's crash
        raise HookFailure(f"{type(exc).__name__}: {exc}") from None


async def _ask_http(hook: HttpHook, payload: dict[str, Any], how: Asking, timeout: float) -> Any:
    from runtime.tools.http_tool import perform, resolve_headers
    from runtime.tools.ssrf import Allowlist

    headers = resolve_headers(hook.headers, how.secrets)
    ctx = ToolContext(how.run_id, how.session_id, how.agent, how.key)
    output = await perform(
        "POST",
        hook.url,
        headers=headers.headers,
        ctx=ctx,
        allow=Allowlist(hook.allow_private),
        timeout=timeout,
        secrets=headers.secrets,
        credentials=headers.credentials,
        json=payload,
    )
    full = output.full if isinstance(output.full, dict) else {}
    status = full.get("status", 0)
    if status == 204:
        return None
    if not 200 <= status < 300:
        raise HookFailure(f"answered HTTP {status}: {output.text[:200]}")
    body = full.get("body")
    if isinstance(body, str):
        if not body.strip():
            raise HookFailure("answered an empty body (send a JSON answer, or 204 to allow)")
        try:
            body = json.loads(body)
        except ValueError:
            raise HookFailure(f"the answer is not JSON: {body[:80]!r}") from None
    return body


_handlers: dict[tuple[str, str], Any] = {}


async def _ask_python(hook: PythonHook, payload: dict[str, Any], how: Asking) -> Any:
    from runtime.tools.python_tool import resolve_handler

    key = (hook.handler, how.package)
    func = _handlers.get(key)
    if func is None:  # checked against the tools package again here, not only at build
        func = _handlers[key] = resolve_handler(hook.handler, how.package)
    if inspect.iscoroutinefunction(func):
        return await func(payload)
    return await asyncio.to_thread(func, payload)


def _ask_lambda(hook: LambdaHook, payload: dict[str, Any], how: Asking) -> Any:
    try:
        answer = how.lambda_client().invoke(
            FunctionName=hook.function_arn,
            InvocationType="RequestResponse",
            Payload=json.dumps(payload, default=str).encode(),
        )
    except Exception as exc:  # botocore errors: throttling, missing function, access
        raise HookFailure(
            f"could not invoke {hook.function_arn}: {type(exc).__name__}: {exc}"
        ) from None
    body = answer["Payload"].read().decode("utf-8", errors="replace")
    try:
        result: Any = json.loads(body) if body else None
    except json.JSONDecodeError:
        raise HookFailure(f"the answer is not JSON: {body[:80]!r}") from None
    if answer.get("FunctionError"):
        detail = result if isinstance(result, dict) else {"errorMessage": str(result)}
        message = f"{detail.get('errorType', 'Error')}: {detail.get('errorMessage', '')}"
        raise HookFailure(f"the function failed: {message}"[:300])
    return result
