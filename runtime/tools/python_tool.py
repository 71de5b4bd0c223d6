"""`type: python` tools: plain sync or async functions from the project's tools package.

The handler path is checked again here (not only at build time): YAML must never become a
way to import and call an arbitrary module.
"""

from __future__ import annotations

import importlib
import inspect
import types
import typing
from concurrent.futures import Executor
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
    module = importlib.import_module(match["module"])
    func = getattr(module, match["attr"], None)
    if func is None or not callable(func) or match["attr"].startswith("_"):
        raise ToolError(f"no public function {match['attr']!r} in {match['module']}")
    return func


def _json_type(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    if origin in {typing.Union, types.UnionType}:
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _json_type(options[0]) if len(options) == 1 else {}
    base = origin or annotation
    return {"type": _JSON_TYPES[base]} if base in _JSON_TYPES else {}


def schema_from_signature(func: Any) -> dict[str, Any]:
    """A JSON Schema derived from type hints: parameters without defaults are required."""
    hints = typing.get_type_hints(func)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in inspect.signature(func).parameters.items():
        if parameter.kind in {parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD}:
            continue
        properties[name] = _json_type(hints.get(name, Any))
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def python_tool(
    name: str, config: PythonTool, package: str, threads: Executor | None = None
) -> FunctionTool:
    """A sync function runs in `threads` (the agent's pool, runtime.tools.threads)."""
    func = resolve_handler(config.handler, package)
    schema = config.input_schema or schema_from_signature(func)
    if inspect.iscoroutinefunction(func):

        async def invoke(arguments: dict[str, Any], ctx: ToolContext) -> Any:
            return await func(**arguments)

    else:
        executor = threads or pool("", DEFAULT_PARALLELISM)

        async def invoke(arguments: dict[str, Any], ctx: ToolContext) -> Any:
            return await run_blocking(executor, func, **arguments)

    return FunctionTool(
        name=name,
        description=config.description,
        input_schema=schema,
        func=invoke,
        effect=config.effect,
        timeout=config.timeout,
        max_chars=config.max_chars,
    )
