"""`type: python` tools: plain sync or async functions from the project's tools package.

The handler path is checked again here (not only at build time): YAML must never become a
way to import and call an arbitrary module.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
import typing
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from runtime.spec.tools import PYTHON_HANDLER_RE, PythonTool
from runtime.tools.base import FunctionTool, ToolContext, ToolError
from runtime.tools.threads import DEFAULT_PARALLELISM, pool, run_blocking

_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


def resolve_handler(handler: str, package: str) -> Any:
    match = PYTHON_HANDLER_RE.match(handler)
    if not match or match["module"].split(".")[0] != package:
        raise ToolError(f"python tool handler {handler!r} is outside the tools package {package!r}")
    try:
        module = importlib.import_module(match["module"])
    except Exception as exc:
        from runtime.errors import ToolImportFailed

        raise ToolImportFailed(
            f"{handler}: module {match['module']!r} does not import: {import_failure(exc)}"
        ) from exc
    func = getattr(module, match["attr"], None)
    if func is None or not callable(func) or match["attr"].startswith("_"):
        raise ToolError(f"no public function {match['attr']!r} in {match['module']}")
    return func


def import_failure(exc: BaseException) -> str:
    """`ExceptionType: message (file, line N)`: the innermost frame of the failing import
    that is not Python's own import machinery (the project's line that raised)."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "importlib" not in f.filename]
    where = f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f" ({exc.filename}, line {exc.lineno})"
    return f"{type(exc).__name__}: {exc}{where}"


def _json_type(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    if origin in {typing.Union, types.UnionType}:
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _json_type(options[0]) if len(options) == 1 else {}
    base = origin or annotation
    return {"type": _JSON_TYPES[base]} if base in _JSON_TYPES else {}


@dataclass(frozen=True)
class CallContext:
    """What a Python tool may know about its call. A tool asks for it with a parameter
    annotated `CallContext` (any name; it is not part of the tool's input schema):

        def refund(order_id: str, amount: float, call: CallContext) -> dict: ...

    `idempotency_key` is the same however often this call is attempted (a retried step, a
    resumed run) and different for every other call, across runs: give it to a payment API
    so that an `idempotent` or `at_most_once` tool never acts twice."""

    run_id: str
    session_id: str
    agent: str
    call_id: str
    idempotency_key: str


def _hints(func: Any) -> dict[str, Any]:
    return typing.get_type_hints(func)


def _is_model(annotation: Any) -> bool:
    """Whether a parameter takes a pydantic model. A model class exists only once its module
    imported pydantic: without it loaded, no parameter is one (a step of agents whose tools
    take plain values never imports pydantic for them)."""
    pydantic = sys.modules.get("pydantic")
    return (
        pydantic is not None
        and isinstance(annotation, type)
        and issubclass(annotation, pydantic.BaseModel)
    )


def schema_from_signature(func: Any) -> dict[str, Any]:
    """A JSON Schema derived from type hints: parameters without defaults are required; a
    pydantic model's parameter takes the model's own schema (its definitions hoisted to the
    root); a `CallContext` parameter is filled by agentfn, not by the model."""
    hints = _hints(func)
    properties: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in inspect.signature(func).parameters.items():
        if parameter.kind in {parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD}:
            continue
        annotation = hints.get(name, Any)
        if annotation is CallContext:
            continue
        if _is_model(annotation):
            schema = annotation.model_json_schema(ref_template="#/$defs/{model}")
            definitions.update(schema.pop("$defs", {}))
            properties[name] = schema
        else:
            properties[name] = _json_type(annotation)
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
    found: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    if definitions:
        found["$defs"] = definitions
    return found


def _binder(func: Any) -> Any:
    """How the model's arguments become the function's: pydantic models built from their
    JSON, the CallContext added. None when the arguments pass as they are (the common case,
    and the fast one)."""
    hints = _hints(func)
    models = {n: a for n, a in hints.items() if n != "return" and _is_model(a)}
    context = next((n for n, a in hints.items() if a is CallContext), None)
    if not models and context is None:
        return None

    def bind(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        bound = dict(arguments)
        for name, model in models.items():
            if name in bound:
                bound[name] = model.model_validate(bound[name])
        if context is not None:
            bound[context] = CallContext(
                ctx.run_id, ctx.session_id, ctx.agent, ctx.call_id, ctx.idempotency_key
            )
        return bound

    return bind


def plain(output: Any) -> Any:
    """What a tool returned, as JSON-able data: pydantic models and dataclasses (at any
    depth) by their fields, text as it is; anything else as it is (rendered with str())."""
    if output is None or isinstance(output, str | int | float | bool):
        return output
    copied = _json_copy(output)
    if copied is not _NOT_JSON:  # plain JSON data, the common case: no pydantic to load
        return copied
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    try:
        return to_jsonable_python(output)
    except PydanticSerializationError:
        return output


_NOT_JSON: Any = object()


def _json_copy(value: Any) -> Any:
    """A copy of `value` when it is plain JSON data (dicts with string keys, lists, strings,
    numbers, booleans, None; exact types), which is what to_jsonable_python makes of it;
    _NOT_JSON when it holds anything else (left to pydantic: models, dataclasses, tuples,
    enums, dates...)."""
    kind = type(value)
    if kind is dict:
        copy = {}
        for key, item in value.items():
            inner = _json_copy(item)
            if type(key) is not str or inner is _NOT_JSON:
                return _NOT_JSON
            copy[key] = inner
        return copy
    if kind is list:
        items = [_json_copy(item) for item in value]
        return _NOT_JSON if any(i is _NOT_JSON for i in items) else items
    return value if value is None or kind in _JSON_SCALARS else _NOT_JSON


_JSON_SCALARS = (str, int, float, bool)


def python_tool(
    name: str, config: PythonTool, package: str, threads: Executor | None = None
) -> FunctionTool:
    """A sync function runs in `threads` (the agent's pool, runtime.tools.threads)."""
    func = resolve_handler(config.handler, package)
    schema = config.input_schema or schema_from_signature(func)
    bind = _binder(func)
    if inspect.iscoroutinefunction(func):

        async def invoke(arguments: dict[str, Any], ctx: ToolContext) -> Any:
            kwargs = arguments if bind is None else bind(arguments, ctx)
            return plain(await func(**kwargs))

    else:
        executor = threads or pool("", DEFAULT_PARALLELISM)

        async def invoke(arguments: dict[str, Any], ctx: ToolContext) -> Any:
            kwargs = arguments if bind is None else bind(arguments, ctx)
            return plain(await run_blocking(executor, func, **kwargs))

    return FunctionTool(
        name=name,
        description=config.description,
        input_schema=schema,
        func=invoke,
        effect=config.effect,
        timeout=config.timeout,
        max_chars=config.max_chars,
    )
