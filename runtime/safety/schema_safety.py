"""What makes a JSON Schema unsafe to use on text from a model or a server, found without
compiling it:

- a `$ref` that is not local (`#…`): the validator would fetch it, from the network (past
  the SSRF guard: loopback, instance metadata) or from a `file://` path;
- a local `$ref` that points to nothing (the schema cannot compile);
- a `$ref` that leads back to where it is written without passing through a property or
  an item (`{"$ref": "#"}`, or through `allOf`): checking a value would never end;
- a `pattern` or `patternProperties` key that is not a regular expression or can backtrack
  catastrophically (runtime.safety.regex_safety).

The same rules serve `agentfn validate` (tool input_schema, agent output_schema, with the
problem's place in the file) and the run time (MCP servers' tool schemas, which arrive
only then). Standard library only: this module ships in the Lambda.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    from runtime.safety.regex_safety import Budget

SchemaPath = tuple[str | int, ...]

#: Keywords whose values are data, not schemas: never searched for references or patterns.
_DATA = frozenset({"enum", "const", "default", "examples", "required"})
#: Keywords holding a mapping of names to schemas (the names are not keywords).
_MAPS = frozenset(
    {"properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies"}
)
#: Keywords that apply their schemas to the same value (no property or item in between).
_IN_PLACE = frozenset(
    {"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies"}
)
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")


@dataclass(frozen=True)
class SchemaProblem:
    path: SchemaPath  # inside the schema
    message: str

    def describe(self) -> str:
        where = ".".join(str(p) for p in self.path)
        return f"at {where}: {self.message}" if where else self.message


def schema_problems(schema: Any, budget: Budget | None = None) -> list[SchemaProblem]:
    """Every reason above, each where it is written in the schema. `budget` bounds the
    pattern analysis across calls (one per spec at build time)."""
    budgets = [budget] if budget else []

    def regex_problem(pattern: str) -> str | None:
        from runtime.safety.regex_safety import Budget, regex_problem  # paid for by patterns only

        if not budgets:
            budgets.append(Budget())
        return regex_problem(pattern, budgets[0])

    problems: list[SchemaProblem] = []
    targets: dict[SchemaPath, SchemaPath] = {}  # where a $ref is written → what it names
    for path, node, base in _schemas(schema, (), ()):
        for key in _REFS:
            ref = node.get(key)
            if not isinstance(ref, str):
                continue
            where = (*path, key)
            if not ref.startswith("#"):
                problems.append(
                    SchemaProblem(
                        where,
                        f"{key} {ref!r} points outside this schema; only local references "
                        "(#/…) are allowed: agentfn never fetches schemas from URLs or files",
                    )
                )
                continue
            target = _resolve(schema, base, ref[1:])
            if target is None:
                problems.append(SchemaProblem(where, f"{key} {ref!r} points to nothing"))
            else:
                targets[path] = target
        pattern = node.get("pattern")
        if isinstance(pattern, str) and (reason := regex_problem(pattern)):
            problems.append(SchemaProblem((*path, "pattern"), reason))
        keys = node.get("patternProperties")
        for key in keys if isinstance(keys, dict) else ():
            if isinstance(key, str) and (reason := regex_problem(key)):
                problems.append(SchemaProblem((*path, "patternProperties", key), reason))
    problems.extend(_loops(schema, targets))
    return problems


def _schemas(
    node: Any, path: SchemaPath, base: SchemaPath
) -> Iterator[tuple[SchemaPath, dict[str, Any], SchemaPath]]:
    """Every schema object with its path and the path of the document its `#` refers to
    (the nearest enclosing schema with its own `$id`, else the root)."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _schemas(item, (*path, index), base)
        return
    if not isinstance(node, dict):
        return
    own_id = node.get("$id", node.get("id"))
    if path and isinstance(own_id, str) and not own_id.startswith("#"):
        base = path
    yield path, node, base
    for key, value in node.items():
        if key in _DATA:
            continue
        if key in _MAPS and isinstance(value, dict):
            for name, sub in value.items():
                yield from _schemas(sub, (*path, key, name), base)
        elif isinstance(value, dict | list):
            yield from _schemas(value, (*path, key), base)


def _resolve(schema: Any, base: SchemaPath, pointer: str) -> SchemaPath | None:
    """The path a JSON pointer (`/definitions/a`, `` for the document) names, or None."""
    node = _at(schema, base)
    path = list(base)
    if pointer == "":
        return tuple(path)
    if not pointer.startswith("/"):
        return None  # a plain-name fragment (`#foo`): the validator cannot resolve it either
    for token in unquote(pointer[1:]).split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
            path.append(token)
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
            path.append(int(token))
        else:
            return None
    return tuple(path)


def _at(schema: Any, path: SchemaPath) -> Any:
    for element in path:
        schema = schema[element]
    return schema


def _loops(schema: Any, targets: dict[SchemaPath, SchemaPath]) -> list[SchemaProblem]:
    """`$ref`s that lead back to where they are written through in-place keywords only."""
    problems: list[SchemaProblem] = []
    for start in targets:
        seen: set[SchemaPath] = set()
        todo = [targets[start]]
        while todo:
            path = todo.pop()
            if path == start:
                problems.append(
                    SchemaProblem(
                        (*start, "$ref"),
                        "this reference leads back to itself without passing through a "
                        "property or an item, so checking a value would never end",
                    )
                )
                break
            if path in seen:
                continue
            seen.add(path)
            todo.extend(_in_place(_at(schema, path), path, targets))
    return problems


def _in_place(
    node: Any, path: SchemaPath, targets: dict[SchemaPath, SchemaPath]
) -> list[SchemaPath]:
    """The schemas applied to the same value as the schema at `path`."""
    if not isinstance(node, dict):
        return []
    found = [targets[path]] if path in targets else []
    for key in _IN_PLACE & node.keys():
        value = node[key]
        if isinstance(value, dict) and key in _MAPS:
            found += [(*path, key, name) for name, sub in value.items() if isinstance(sub, dict)]
        elif isinstance(value, dict):
            found.append((*path, key))
        elif isinstance(value, list):
            found += [(*path, key, i) for i, sub in enumerate(value) if isinstance(sub, dict)]
    return found
