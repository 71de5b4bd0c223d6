"""Load YAML safely *and* remember where every key and value was written.

PyYAML's composer gives nodes with marks; we construct the plain data with the safe
constructor and, in the same walk, record the position of each key path. Validation errors
(from pydantic or from reference checks) are then reported at `file:line:column`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based


@dataclass
class SourceMap:
    """Positions of key paths: where the key was written and where its value starts."""

    keys: dict[Path_, Position] = field(default_factory=dict)
    values: dict[Path_, Position] = field(default_factory=dict)

    def locate(self, path: Path_, *, key: bool = False) -> tuple[Path_, Position]:
        """The position of `path`, or of its nearest recorded ancestor.

        Pydantic locations may hold extra elements (a union's tag) that are not in the YAML;
        those are skipped while walking so the deepest real node still wins.
        """
        best: Path_ = ()
        current: Path_ = ()
        for element in path:
            candidate = (*current, element)
            if candidate in self.values:
                current = candidate
                best = current
        table = self.keys if key and best in self.keys else self.values
        return best, table.get(best, Position(1, 1))


@dataclass(frozen=True)
class LoadProblem:
    message: str
    position: Position
    path: Path_ = ()


class YamlLoadError(Exception):
    def __init__(self, problems: list[LoadProblem]):
        super().__init__(problems[0].message if problems else "invalid YAML")
        self.problems = problems


def _pos(mark: yaml.Mark) -> Position:
    return Position(mark.line + 1, mark.column + 1)


def _walk(node: yaml.Node, path: Path_, source: SourceMap, problems: list[LoadProblem]) -> None:
    source.values[path] = _pos(node.start_mark)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, Position] = {}
        for key_node, value_node in node.value:
            if (
                not isinstance(key_node, yaml.ScalarNode)
                or key_node.tag == "tag:yaml.org,2002:merge"
            ):
                continue
            key = key_node.value
            child = (*path, key)
            if key in seen:
                problems.append(
                    LoadProblem(
                        f"duplicate key {key!r} (first written at line {seen[key].line})",
                        _pos(key_node.start_mark),
                        child,
                    )
                )
            seen[key] = _pos(key_node.start_mark)
            source.keys[child] = _pos(key_node.start_mark)
            _walk(value_node, child, source, problems)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), source, problems)


def load_yaml(text: str) -> tuple[Any, SourceMap]:
    """Parse one YAML document with the safe loader; return its data and source map.

    Raises YamlLoadError for syntax errors and duplicate keys (which the safe loader would
    otherwise resolve silently, last one wins).
    """
    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            position = _pos(mark) if mark else Position(1, 1)
            problem = exc.problem or str(exc)
            context = f" ({exc.context})" if exc.context else ""
            raise YamlLoadError(
                [LoadProblem(f"YAML syntax error: {problem}{context}", position)]
            ) from exc
        if node is None:
            return None, SourceMap()
        source = SourceMap()
        problems: list[LoadProblem] = []
        _walk(node, (), source, problems)
        if problems:
            raise YamlLoadError(problems)
        try:
            data = loader.construct_document(node)
        except yaml.constructor.ConstructorError as exc:
            mark = exc.problem_mark
            raise YamlLoadError(
                [LoadProblem(f"YAML error: {exc.problem}", _pos(mark) if mark else Position(1, 1))]
            ) from exc
        return data, source
    finally:
        loader.dispose()


def read_yaml_file(path: Path) -> tuple[Any, SourceMap]:
    return load_yaml(path.read_text(encoding="utf-8"))
