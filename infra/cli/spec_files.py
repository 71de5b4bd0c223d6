"""The spec as a command reads it: validated (every problem reported on stderr, located),
for the environment asked; and the JSON Schema editors check agents.yaml against.

Its own module so the commands (infra.cli.commands), `agentfn init` (infra.cli.scaffold)
and the local answers (infra.cli.local_runs) share them without importing each other.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from infra.checks.validate import ValidationResult, validate_file
from runtime.spec import AgentfnSpec


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def report(result: ValidationResult) -> None:
    for issue in result.issues:
        _err(str(issue))
    count = len(result.issues)
    _err(f"{count} problem{'s' if count != 1 else ''} found.")


def load(spec_file: str, env: str | None = None) -> AgentfnSpec | None:
    result = validated(spec_file, env)
    return result.spec if result is not None else None


def validated(spec_file: str, env: str | None) -> ValidationResult | None:
    """The spec of environment `env` (`--env`, else AGENTFN_ENV, else the base), or None
    after reporting every problem."""
    from infra.checks.environments import selected

    result = validate_file(Path(spec_file), selected(env))
    if not result.ok:
        report(result)
        return None
    return result


def json_schema() -> str:
    from runtime.spec.environments import SpecFile

    schema = SpecFile.model_json_schema(by_alias=True)
    document = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "agentfn agents.yaml",
        **{k: v for k, v in schema.items() if k != "title"},
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
