"""Build-time checks of what the issue-25 features embed in a spec: an agent's computed
system prompt (`system_prompt: {python: MODULE:FUNCTION}`, checked like a Python tool's
handler: in the tools package, the function there; the module importing is checked with the
tools' by infra.checks.tool_imports) and an `llm`
workflow step's `output_schema` (a valid, safe JSON Schema, like an agent's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from infra.checks.issues import RefProblem
from infra.checks.issues import mapping as _mapping
from infra.checks.schema_checks import SPEC_REGEX_WORK, check_json_schema
from infra.checks.tool_refs import check_python_handler
from infra.checks.yamlsrc import Path_
from runtime.safety.regex_safety import Budget


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def check_prompts_and_llm_steps(root: dict[str, Any], project_dir: Path) -> Iterator[RefProblem]:
    package = root.get("tools_package", "tools")
    for name, raw in _mapping(root.get("agents")).items():
        handler = _mapping(_mapping(raw).get("system_prompt")).get("python")
        if isinstance(handler, str):  # whether it imports: infra.checks.tool_imports, at validate
            where: Path_ = ("agents", name, "system_prompt", "python")
            yield from check_python_handler(handler, package, project_dir, where)
    budget = Budget(SPEC_REGEX_WORK)
    for name, raw in _mapping(root.get("workflows")).items():
        for i, step in enumerate(_list(_mapping(raw).get("steps"))):
            schema = _mapping(_mapping(step).get("llm")).get("output_schema")
            if schema is not None:
                path: Path_ = ("workflows", name, "steps", i, "llm", "output_schema")
                yield from check_json_schema(schema, path, budget)
