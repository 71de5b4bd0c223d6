"""Lambda invocations on the embedded AWS, dispatched to Python functions in process.

moto's Lambda backend without Docker answers every invoke with a canned body. Here its
`invoke` is routed to handlers registered by function name (or ARN), called with the event
and a small context, exactly as the Lambda runtime would: a raised exception becomes a
function error (`FunctionError: Unhandled` with errorMessage/errorType), the way the real
service reports it. Functions not registered are "not found", as in AWS.
"""

from __future__ import annotations

import json
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Handler = Callable[[Any, Any], Any]

_HANDLERS: dict[str, Handler] = {}
_LOCK = threading.Lock()


class LocalContext:
    """The parts of the Lambda context object handlers commonly read."""

    def __init__(self, name: str, timeout_ms: int = 900_000):
        self.function_name = name
        self.memory_limit_in_mb = 1024
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        self.aws_request_id = "local"
        self._timeout_ms = timeout_ms

    def get_remaining_time_in_millis(self) -> int:
        return self._timeout_ms


def function_name(name_or_arn: str) -> str:
    """`arn:aws:lambda:…:function:NAME[:qualifier]` or `NAME` → `NAME`."""
    if name_or_arn.startswith("arn:"):
        return name_or_arn.split(":")[6]
    return name_or_arn


def register(name: str, handler: Handler) -> None:
    with _LOCK:
        _HANDLERS[function_name(name)] = handler


def _invoke(name: str, body: Any, response_headers: dict[str, Any]) -> bytes:
    handler = _HANDLERS.get(function_name(name))
    if handler is None:
        from moto.awslambda.exceptions import UnknownFunctionException

        raise UnknownFunctionException(name)
    event = json.loads(body) if body else {}
    try:
        result = handler(event, LocalContext(function_name(name)))
    except Exception as exc:  # the Lambda runtime reports it as a function error
        response_headers["x-amz-function-error"] = "Unhandled"
        error = {
            "errorMessage": str(exc),
            "errorType": type(exc).__name__,
            "stackTrace": traceback.format_exception(exc)[-3:],
        }
        return json.dumps(error).encode()
    return json.dumps(result).encode()


@contextmanager
def dispatching() -> Iterator[None]:
    """Route moto's (Docker-less) Lambda invokes to the registered handlers."""
    from moto.awslambda_simple.models import LambdaSimpleBackend

    original = LambdaSimpleBackend.invoke

    def invoke(
        self: Any, name: str, qualifier: Any, body: Any, headers: Any, response_headers: Any
    ) -> bytes:
        return _invoke(name, body, response_headers)

    LambdaSimpleBackend.invoke = invoke  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        LambdaSimpleBackend.invoke = original  # type: ignore[method-assign]
        with _LOCK:
            _HANDLERS.clear()
