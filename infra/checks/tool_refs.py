"""Rules about a tool reference that several checks share (references, hook_checks,
prompt_checks): does an approval or hook `match` pattern cover a tool, does a python
`handler` name a public function of the tools package, is a header a credential, is a
path a hook's header. Its own module so those checks import it, never each other.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from infra.checks.issues import RefProblem, did_you_mean
from infra.checks.yamlsrc import Path_
from runtime.spec.shared import PYTHON_HANDLER_RE

SENSITIVE_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|password|cookie", re.I)


def is_hook_header(path: Path_) -> bool:
    """Is `path` a header value of a hook (where `${secret:NAME}` is resolved)?"""
    for start in ((), ("defaults",)):
        n = len(start)
        if path[:n] == start and len(path) == n + 4 and path[n] == "hooks":
            return path[n + 2] == "headers"
    return len(path) == 6 and path[0] == "agents" and path[2] == "hooks" and path[4] == "headers"


def approval_matches(pattern: str, ref: str) -> bool:
    """Does an approval pattern cover a tool reference of the agent?

    `mcp:orders/delete_*` covers `mcp:orders` (the server's tools are known only at run
    time), so a rule naming single tools of a selected server is accepted.
    """
    if fnmatch.fnmatchcase(ref, pattern):
        return True
    if pattern.startswith("mcp:") and ref.startswith("mcp:") and "/" not in ref:
        return pattern.removeprefix("mcp:").partition("/")[0] == ref.removeprefix("mcp:")
    return False


def check_python_handler(
    handler: str, package: Any, project_dir: Path, path: Path_
) -> Iterator[RefProblem]:
    """A python tool, hook or prompt `handler` names a public function of a module inside
    the project's tools package (read with ast, never imported here)."""
    match = PYTHON_HANDLER_RE.match(handler)
    if not match:
        return  # the model reports the pattern
    module, attr = match["module"], match["attr"]
    if not isinstance(package, str) or module.split(".")[0] != package:
        yield RefProblem(
            path,
            f"python tools must live in the project's tools package: expected "
            f"'{package}.MODULE:FUNCTION', got {handler!r}",
        )
        return
    parts = module.split(".")
    candidates = [
        project_dir.joinpath(*parts).with_suffix(".py"),
        project_dir.joinpath(*parts, "__init__.py"),
    ]
    source = next((c for c in candidates if c.is_file()), None)
    if source is None:
        yield RefProblem(
            path,
            f"module {module!r} not found (looked for {candidates[0].relative_to(project_dir)})",
        )
        return
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except SyntaxError as exc:
        yield RefProblem(path, f"{source.name} has a syntax error at line {exc.lineno}: {exc.msg}")
        return
    functions = [
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and not n.name.startswith("_")
    ]
    if attr not in functions:
        yield RefProblem(
            path, f"no public function {attr!r} in {module}{did_you_mean(attr, functions)}"
        )
