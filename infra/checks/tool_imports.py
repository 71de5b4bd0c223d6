"""`agentfn validate` imports each Python tool's module, as the run will, in a child process.

The static checks (infra.checks.references) see a module that exists and a function it defines;
only an import sees `import stripe` failing, a typo at module level, or a missing data file
read at import. Importing in a child keeps whatever the module does at import (state, threads,
a crash) out of the CLI, and a hung import is bounded by a timeout.

The same import says which installed distributions each module pulls in: one that neither
agentfn's layers nor `tools/requirements.txt` ship (nor the Lambda runtime, which has boto3)
imports here and fails deployed, which `agentfn validate` warns about.

Answers are cached per process by the modules and the tools package's files (their paths,
sizes and times), so the tests, which validate the same projects again and again, pay once.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from infra.checks.issues import RefProblem

if TYPE_CHECKING:
    from collections.abc import Iterator

    from runtime.spec import AgentfnSpec

TIMEOUT_SECONDS = 30

_CHILD = r"""
import importlib, importlib.metadata, json, sys
sys.path.insert(0, sys.argv[1])
from runtime.tools.python_tool import import_failure
owners = importlib.metadata.packages_distributions()
failed, pulled = {}, {}
for name in sys.argv[2:]:
    before = set(sys.modules)
    try:
        importlib.import_module(name)
    except BaseException as exc:
        failed[name] = import_failure(exc)
        continue
    tops = {m.partition(".")[0] for m in set(sys.modules) - before}
    pulled[name] = sorted({d for top in tops for d in owners.get(top, [])})
print(json.dumps({"failed": failed, "pulled": pulled}))
"""


@dataclass(frozen=True)
class ImportReport:
    failed: dict[str, str]  # module → why it does not import
    pulled: dict[str, list[str]]  # module → the installed distributions its import loaded


def import_problems(spec: AgentfnSpec) -> Iterator[RefProblem]:
    """A problem at each Python tool's handler (and computed system prompt's function) whose
    module does not import. Run by
    `agentfn validate` and `agentfn build` on a spec valid otherwise; `agentfn run` imports
    the modules itself (a failure is its TOOL_IMPORT), so it does not pay for a child."""
    from runtime.spec.agents import PythonPrompt

    project = spec.project_dir()
    python: dict[tuple[str | int, ...], str] = {
        ("tools", name, "handler"): tool.handler.partition(":")[0]
        for name, tool in spec.tools.items()
        if tool.type == "python"
    }
    for name, agent in spec.agents.items():  # computed system prompts import the same way
        if isinstance(agent.system_prompt, PythonPrompt):
            where = ("agents", name, "system_prompt", "python")
            python[where] = agent.system_prompt.python.partition(":")[0]
    if project is None or not python:
        return
    failed = import_report(project, spec.tools_package, sorted(set(python.values()))).failed
    for at, module in python.items():
        if module in failed:
            yield RefProblem(at, f"module {module!r} does not import: {failed[module]}")


def import_report(project_dir: Path, package: str, modules: list[str]) -> ImportReport:
    if not modules:
        return ImportReport({}, {})
    folder = project_dir / package
    files = sorted(folder.rglob("*.py")) if folder.is_dir() else []
    stamp = tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    failed, pulled = _check(str(project_dir), tuple(sorted(set(modules))), stamp)
    return ImportReport(dict(failed), {m: list(d) for m, d in pulled})


@cache
def _check(
    project_dir: str, modules: tuple[str, ...], stamp: tuple[tuple[str, int, int], ...]
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, project_dir, *modules],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            cwd=project_dir,
        )
    except subprocess.TimeoutExpired:
        return tuple((m, f"importing took over {TIMEOUT_SECONDS}s") for m in modules), ()
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):  # the child itself died (a module called os._exit, …)
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return tuple((m, f"the import check died: {tail}") for m in modules), ()
    failed = tuple(sorted(answer["failed"].items()))
    pulled = tuple((m, tuple(d)) for m, d in sorted(answer["pulled"].items()))
    return failed, pulled


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    return normalized(match.group(0)) if match else ""


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def deployed_distributions(requirements: list[str]) -> set[str]:
    """Every distribution a deployed function can import: these requirements (agentfn's
    layers and the tools' own) with what they depend on as installed here, and boto3 with
    its dependencies (Lambda's Python runtime has them)."""
    from importlib import metadata

    todo = [_name(r) for r in [*requirements, "boto3"]]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if not name or name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [_name(r) for r in requires if "extra ==" not in r]
    return seen


def undeployed_imports(spec: AgentfnSpec) -> list[tuple[tuple[str | int, ...], str]]:
    """(key path of the tool's handler, warning) for each Python tool whose module imports an
    installed distribution that no layer ships: it imports here and would fail deployed."""
    from infra.sam.layers import layers

    project = spec.project_dir()
    python = {
        name: tool.handler.partition(":")[0]
        for name, tool in spec.tools.items()
        if tool.type == "python"
    }
    if project is None or not python:
        return []
    report = import_report(project, spec.tools_package, sorted(set(python.values())))
    shipped = deployed_distributions([r for layer in layers(spec) for r in layer.requirements])
    warned: set[str] = set()
    found: list[tuple[tuple[str | int, ...], str]] = []
    for name, module in python.items():
        missing = [
            d for d in report.pulled.get(module, []) if normalized(d) not in shipped | warned
        ]
        warned |= {normalized(d) for d in missing}
        if missing:
            listed = ", ".join(missing)
            found.append(
                (
                    ("tools", name, "handler"),
                    f"{module} imports {listed}, installed here but not deployed: add "
                    f"{'it' if len(missing) == 1 else 'them'} to "
                    f"{spec.tools_package}/requirements.txt",
                )
            )
    return found
