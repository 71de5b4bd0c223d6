"""Stage the Lambda code package: only what runs.

`template.yaml` points every function at `.agentfn/package/` (CodeUri). This module fills
that folder with `runtime/`, `handlers/`, the project's tools package, the compiled spec and
a `requirements.txt` that `sam build` installs. Tests, `infra/`, moto and the CLI's own
build-time dependencies (PyYAML, jsonschema) never reach a Lambda.

A large template's state machine definitions go next to it, in `.agentfn/statemachines/`
(outside the Lambda package), where its `DefinitionUri`s point.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import handlers
import runtime
from infra.sam.template import PACKAGE_DIR, SPEC_FILE, STATE_MACHINES_DIR, definition_files
from runtime.spec import AgentfnSpec

#: What the Lambda functions import at run time (boto3 comes with the Lambda runtime).
RUNTIME_REQUIREMENTS = (
    "pydantic>=2.7,<3",
    "aws-lambda-powertools>=3.0,<4",
    "httpx>=0.27,<1",
    "fastjsonschema>=2.19",
)
MCP_REQUIREMENT = "mcp>=2.0,<3"

_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".DS_Store")


def requirements(spec: AgentfnSpec) -> list[str]:
    reqs = list(RUNTIME_REQUIREMENTS)
    if spec.mcp_servers:
        reqs.append(MCP_REQUIREMENT)
    return reqs


def stage_package(spec: AgentfnSpec, project_dir: Path, template_dir: Path) -> Path:
    """(Re)create the package folder next to the template and return its path."""
    target = template_dir / PACKAGE_DIR
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for package in (runtime, handlers):
        assert package.__file__ is not None
        source = Path(package.__file__).resolve().parent
        shutil.copytree(source, target / source.name, ignore=_IGNORE)
    tools = project_dir / spec.tools_package
    if tools.is_dir():
        shutil.copytree(tools, target / spec.tools_package, ignore=_IGNORE)
    (target / SPEC_FILE).write_text(
        json.dumps(spec.to_compiled(), indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    (target / "requirements.txt").write_text("\n".join(requirements(spec)) + "\n", encoding="utf-8")
    stage_definitions(spec, template_dir)
    return target


def stage_definitions(spec: AgentfnSpec, template_dir: Path) -> None:
    """(Re)write the state machine definitions that a large template references by
    `DefinitionUri` (infra.sam.template.definition_files); none while they are inline."""
    folder = template_dir / STATE_MACHINES_DIR
    if folder.exists():
        shutil.rmtree(folder)
    for path, definition in definition_files(spec).items():
        (template_dir / path).parent.mkdir(parents=True, exist_ok=True)
        (template_dir / path).write_text(
            json.dumps(definition, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
