"""Load YAML safely *and* remember where every key and value was written.

PyYAML's composer gives nodes with marks; we construct the plain data with the safe
constructor and, in the same walk, record the position of each key path. Validation errors
(from pydantic or from reference checks) are then reported at `file:line:column`.

Loading is bounded (infra.checks.yamlbounds): no file can make it slow, hungry or crash, and every
problem it finds (syntax, limits, duplicate keys, keys YAML reads as something other than a
name) is a located message, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from infra.checks.yamlbounds import MAX_BYTES, MAX_DEPTH, BoundedLoader, LimitError, decode

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


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_KEY_KINDS = {
    "tag:yaml.org,2002:bool": "the boolean {value}",
    "tag:yaml.org,2002:int": "a number",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:null": "null (no value)",
    "tag:yaml.org,2002:timestamp": "a date",
}


def _key_problem(key_node: yaml.Node) -> LoadProblem | None:
    """Keys are names: YAML 1.1 reads `on`, `no`, `1`, `null` or `2024-01-01` as something
    else, which no name, header or property can be (and every key must survive JSON)."""
    if not isinstance(key_node, yaml.ScalarNode):
        return LoadProblem(
            "a key must be a plain name, not a list or mapping", _pos(key_node.start_mark)
        )
    if key_node.tag in (_STR_TAG, _MERGE_TAG):
        return None
    text = key_node.value
    value = "true" if text.lower() in {"yes", "true", "on", "y"} else "false"
    kind = _KEY_KINDS.get(key_node.tag, f"a {key_node.tag.rsplit(':', 1)[-1]}")
    return LoadProblem(
        f"key {text!r} is read by YAML as {kind.format(value=value)}, not a name; "
        f"quote it: '{text}'",
        _pos(key_node.start_mark),
    )


def _walk(node: yaml.Node, path: Path_, source: SourceMap, problems: list[LoadProblem]) -> None:
    source.values[path] = _pos(node.start_mark)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, Position] = {}
        for key_node, value_node in node.value:
            problem = _key_problem(key_node)
            if problem is not None:
                named = isinstance(key_node, yaml.ScalarNode)
                where = (*path, key_node.value) if named else path
                problems.append(LoadProblem(problem.message, problem.position, where))
                continue
            if key_node.tag == _MERGE_TAG:
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


def _syntax_message(exc: yaml.MarkedYAMLError) -> str:
    """PyYAML's problem, and where the construct it was reading opened when that was on an
    earlier line (`…; the flow mapping opened at line 3`): the real mistake is usually there."""
    problem = exc.problem or str(exc)
    if "maximum nesting depth" in problem:
        # libyaml 0.2.5+ stops runaway nesting in its scanner (at 1,000 levels), before the
        # composer counts our far lower limit: the same limit, said the same way.
        return f"values are nested more than {MAX_DEPTH} levels deep"
    context, opened = exc.context, exc.context_mark
    if context == "while scanning for the next token":  # says nothing an author can use
        context = None
    if context and opened is not None and exc.problem_mark is not None:
        what = context.removeprefix("while parsing ").removeprefix("while scanning ")
        what = what.removeprefix("a ").removeprefix("an ")
        if opened.line != exc.problem_mark.line:
            return f"YAML syntax error: {problem}; the {what} opened at line {opened.line + 1}"
        return f"YAML syntax error: {problem} (in the {what} at column {opened.column + 1})"
    return f"YAML syntax error: {problem}" + (f" ({context})" if context else "")


def _tab_message(text: str, at: Position) -> str | None:
    """A tab where YAML expected indentation: PyYAML calls it "a character that cannot start
    any token"; say what it is and where."""
    lines = text.splitlines()
    if not 0 < at.line <= len(lines):
        return None
    line = lines[at.line - 1]
    if "\t" not in line[: at.column]:
        return None
    column = line.index("\t") + 1
    return (
        f"a tab character at line {at.line}, column {column}: YAML indents with spaces only "
        "(replace the tab with spaces)"
    )


def _reader_position(text: str, index: int) -> Position:
    before = text[:index]
    return Position(before.count("\n") + 1, index - (before.rfind("\n") + 1) + 1)


def load_yaml(text: str) -> tuple[Any, SourceMap]:
    """Parse one YAML document with the safe loader; return its data and source map.

    Raises YamlLoadError for syntax errors, crossed limits, duplicate keys (which the safe
    loader would otherwise resolve silently, last one wins) and keys that are not names.
    """
    try:
        loader = BoundedLoader(text)
    except yaml.reader.ReaderError as exc:  # the pure-Python reader checks at once
        raise YamlLoadError([_reader_problem(text, exc)]) from exc
    try:
        try:
            node = loader.get_single_node()
        except LimitError as exc:
            raise YamlLoadError([LoadProblem(exc.message, _pos(exc.mark))]) from exc
        except yaml.reader.ReaderError as exc:
            raise YamlLoadError([_reader_problem(text, exc)]) from exc
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            position = _pos(mark) if mark else Position(1, 1)
            message = _tab_message(text, position) or _syntax_message(exc)
            raise YamlLoadError([LoadProblem(message, position)]) from exc
        except yaml.YAMLError as exc:  # anything else the parser reports, still located
            raise YamlLoadError([LoadProblem(f"YAML error: {exc}", Position(1, 1))]) from exc
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


def _reader_problem(text: str, exc: yaml.reader.ReaderError) -> LoadProblem:
    """A character YAML does not allow (control characters): at its line and column."""
    return LoadProblem(
        f"YAML error: character U+{exc.character:04X} is not allowed in YAML (a control "
        "character); remove it",
        _reader_position(text, exc.position),
    )


def read_spec_text(path: Path) -> str:
    """A spec file's text; YamlLoadError (located) when it is too large or not UTF-8. Reads
    at most one byte past the limit, so `/dev/zero` or a huge file costs nothing."""
    with path.open("rb") as handle:
        text = decode(handle.read(MAX_BYTES + 1))
    if isinstance(text, LimitError):
        raise YamlLoadError([LoadProblem(text.message, _pos(text.mark))])
    return text


def read_yaml_file(path: Path) -> tuple[Any, SourceMap]:
    return load_yaml(read_spec_text(path))
