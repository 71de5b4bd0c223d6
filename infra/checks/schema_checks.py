"""Embedded JSON Schemas (tool input_schema, agent output_schema) checked at build time the
way the run time will use them.

Valid against its metaschema is not enough: the run time also refuses a schema with a
remote or file `$ref`, a reference loop or a pattern that can backtrack catastrophically
(runtime.safety.schema_safety), and compiles it with fastjsonschema, which accepts less than the
metaschema allows. Each of those is reported here, at the line it is written on, instead
of failing a tool call or an answer in production.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from infra.checks.issues import RefProblem
from infra.checks.yamlsrc import Path_
from runtime.safety.regex_safety import Budget
from runtime.safety.schema_check import compile_problem
from runtime.safety.schema_safety import schema_problems

#: Steps the pattern analysis may take for all the schemas of one spec together (about a
#: tenth of a second): a file full of hard patterns is refused quickly, not analysed.
SPEC_REGEX_WORK = 500_000


def check_json_schema(
    schema: Any, path: Path_, budget: Budget, *, require_object: bool = False
) -> Iterator[RefProblem]:
    """An embedded JSON Schema must be valid, safe and usable by the run time."""
    import jsonschema  # build-time only; never shipped in the Lambda package

    if not isinstance(schema, dict):
        return  # the model reports the type
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        inner = tuple(exc.absolute_path)
        yield RefProblem((*path, *inner), f"not a valid JSON Schema: {exc.message}")
        return
    except RecursionError:
        yield RefProblem(path, "not a usable JSON Schema: it is nested too deeply")
        return
    if require_object and schema.get("type", "object") != "object":
        yield RefProblem(path, "a tool's input_schema must have type: object")
    # As the run time receives it: the compiled spec is JSON (a YAML date becomes a string).
    as_json = json.loads(json.dumps(schema, default=str))
    problems = schema_problems(as_json, budget)
    for problem in problems:
        yield RefProblem((*path, *problem.path), problem.message)
    if not problems and (reason := compile_problem(as_json)) is not None:
        yield RefProblem(
            path, f"this JSON Schema cannot be used at run time: {reason}", at_key=True
        )
