"""Writes runtime.spec.plain: the run-time form of the spec, generated from its pydantic models.

    python -m infra.sam.plain_spec            # rewrite runtime/spec/plain/
    python -m infra.sam.plain_spec --check    # exit 1 when it differs from the models

Why: a deployed function only reads the compiled spec `agentfn build` wrote from a validated
model, and importing pydantic and building the models cost most of a cold start's own
share. The models stay the one source of truth (the rules, the error messages, the JSON
Schema); this writes, per model module, msgspec structs with the same classes, attribute
names, defaults, keys (aliases) and method mixins (runtime.spec.methods), and the same
discriminated unions (msgspec tags: a tag such as `provider` is a class attribute there).
A test fails when the committed files differ from what this writes
(tests/runtime/spec/test_plain_spec.py), and every spec a test validates is loaded into
them and compared field by field (tests/conftest.py).

A field type it does not know how to carry over is an error here, not a silent `Any`.
"""

from __future__ import annotations

import argparse
import inspect
import subprocess
import sys
import types
from importlib import import_module
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, HttpUrl
from pydantic.fields import FieldInfo

from runtime.spec.models import SpecModel
from runtime.spec.root import AgentfnSpec

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "runtime" / "spec" / "plain"
#: The model modules, in an order where each comes after those it imports.
MODULES = (
    "types", "models", "budget", "context", "databases", "tools", "hooks", "knowledge",
    "monitoring", "protocols", "sandbox", "telemetry", "triggers", "web", "agents",
    "workflows", "root",
)  # fmt: skip
#: Structs that carry more than their fields: where the spec was loaded from, its hash.
WITH_DICT = {"AgentfnSpec"}
_NONE = type(None)


def generate() -> dict[str, str]:
    """File name → text of every generated module of runtime/spec/plain/."""
    spec = _Spec()
    spec.walk(AgentfnSpec)
    files = {f"{m}.py": spec.module_text(m) for m in MODULES if spec.classes_of(m)}
    files["__init__.py"] = spec.init_text()
    return {name: _formatted(name, text) for name, text in files.items()}


class _Spec:
    def __init__(self) -> None:
        self.models: list[type[BaseModel]] = []
        self.tags: dict[type[BaseModel], tuple[str, Any]] = {}  # class → (tag field, tag)
        self.aliases = _union_aliases()  # members → (module, alias name)

    def walk(self, cls: type[BaseModel]) -> None:
        if cls in self.models or cls is SpecModel:
            return
        for base in cls.__bases__:
            if issubclass(base, BaseModel):
                self.walk(base)
        self.models.append(cls)
        for info in cls.model_fields.values():
            self._walk_type(info.annotation, info)

    def _walk_type(self, annotation: Any, info: FieldInfo | None = None) -> None:
        origin = get_origin(annotation)
        if origin is Annotated:
            inner, *meta = get_args(annotation)
            self._tag_union(inner, [m for m in meta if isinstance(m, FieldInfo)])
            self._walk_type(inner)
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            self.walk(annotation)
        else:
            if info is not None and info.discriminator is not None:
                self._tag_union(annotation, [info])
            for arg in get_args(annotation):
                self._walk_type(arg)

    def _tag_union(self, union: Any, meta: list[FieldInfo]) -> None:
        field = next((m.discriminator for m in meta if m.discriminator is not None), None)
        if field is None:
            return
        assert isinstance(field, str), f"discriminator {field!r}: only a field name is known"
        for member in get_args(union):
            tag = member.model_fields[field].annotation
            assert get_origin(tag) is Literal and len(get_args(tag)) == 1, (member, field)
            self.tags[member] = (field, get_args(tag)[0])

    def classes_of(self, module: str) -> list[type[BaseModel]]:
        """The module's models, in the order it defines them (each after those it names)."""
        defined = list(vars(import_module(f"runtime.spec.{module}")).values())
        mine = [c for c in self.models if c.__module__ == f"runtime.spec.{module}"]
        return sorted(mine, key=defined.index)

    def module_text(self, module: str) -> str:
        body: list[str] = []
        imports = _Imports(module)
        for cls in self.classes_of(module):
            body += ["", "", *self._class(cls, imports)]
        for members, (where, name) in sorted(self.aliases.items(), key=lambda a: a[1][1]):
            if where == module and all(m in self.models for m in members):
                body += ["", "", f"{name} = {' | '.join(imports.cls(m) for m in members)}"]
        source = f"runtime/spec/{module}.py"
        head = [
            f'"""The run-time form of {source}: structs without pydantic (runtime.spec.plain).',
            "",
            "Generated by `python -m infra.sam.plain_spec` from the models: do not edit; a",
            'test fails when it differs from what the models give."""',
            "",
        ]
        return "\n".join([*head, *imports.lines(), *body]) + "\n"

    def _class(self, cls: type[BaseModel], imports: _Imports) -> list[str]:
        bases = [imports.mixin(b) for b in cls.__bases__ if not issubclass(b, BaseModel)]
        bases += [
            imports.cls(b) if b is not SpecModel else imports.base()
            for b in cls.__bases__
            if issubclass(b, BaseModel)
        ]
        config = [
            "frozen=True",
            "kw_only=True",
        ]  # each class: the type checker reads no inheritance
        tag = self.tags.get(cls)
        if tag is not None:
            config += [f"tag_field={tag[0]!r}", f"tag={tag[1]!r}"]
        if cls.__name__ in WITH_DICT:
            config.append("dict=True")
        lines = [f"class {cls.__name__}({', '.join([*bases, *config])}):"]
        own = inspect.get_annotations(cls)
        for name, info in cls.model_fields.items():
            if name not in own:
                continue
            if tag is not None and name == tag[0]:
                imports.typing |= {"ClassVar", "Literal"}
                lines.append(f"    {name}: ClassVar[Literal[{tag[1]!r}]] = {tag[1]!r}")
                continue
            lines.append(
                f"    {name}: {self._type(info.annotation, imports)}{_default(info, imports)}"
            )
        if len(lines) == 1:
            lines.append("    pass")
        return lines

    def _type(self, annotation: Any, imports: _Imports) -> str:
        origin = get_origin(annotation)
        args = get_args(annotation)
        if origin is Annotated:
            return self._type(args[0], imports)
        if origin is Union or origin is types.UnionType:
            known = self.aliases.get(args)
            if known is not None:
                return imports.alias(*known)
            return " | ".join(self._type(a, imports) for a in args)
        if origin is list:
            return f"list[{self._type(args[0], imports)}]"
        if origin is dict:
            return f"dict[{self._type(args[0], imports)}, {self._type(args[1], imports)}]"
        if origin is Literal:
            imports.typing.add("Literal")
            return f"Literal[{', '.join(repr(a) for a in args)}]"
        if annotation is Any:
            imports.typing.add("Any")
            return "Any"
        if annotation is _NONE:
            return "None"
        if annotation in (str, int, float, bool):
            return str(annotation.__name__)
        if isinstance(annotation, type) and issubclass(annotation, HttpUrl):
            return "str"  # as the compiled JSON writes it; the run time only reads its text
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return imports.cls(annotation)
        raise TypeError(f"no run-time form for the field type {annotation!r}")

    def init_text(self) -> str:
        names: dict[str, list[str]] = {}
        for cls in self.models:
            names.setdefault(cls.__module__.rpartition(".")[2], []).append(cls.__name__)
        for members, (where, name) in self.aliases.items():
            if all(m in self.models for m in members):
                names[where].append(name)
        lines = [
            '"""The spec as a deployed function reads it: msgspec structs generated from the',
            "pydantic models of runtime.spec (`python -m infra.sam.plain_spec`; do not edit), and",
            'their loaders (runtime.spec.plain.load). See runtime/spec/__init__.py."""',
            "",
        ]
        names["load"] = ["EitherSpec", "load", "load_compiled", "runtime_spec"]
        exported: list[str] = []
        for module, listed in sorted(names.items()):
            public = sorted(n for n in listed if not n.startswith("_"))
            exported += public
            lines.append(f"from runtime.spec.plain.{module} import {', '.join(public)}")
        lines += ["", f"__all__ = {sorted(exported)!r}"]
        return "\n".join(lines) + "\n"


class _Imports:
    """What one generated module imports."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.typing: set[str] = set()
        self.msgspec = False
        self.from_modules: dict[str, set[str]] = {}

    def _add(self, module: str, name: str) -> str:
        if module != f"runtime.spec.plain.{self.module}":  # not defined in this module
            self.from_modules.setdefault(module, set()).add(name)
        return name

    def cls(self, cls: type[BaseModel]) -> str:
        module = cls.__module__.rpartition(".")[2]
        return self._add(f"runtime.spec.plain.{module}", cls.__name__)

    def alias(self, module: str, name: str) -> str:
        return self._add(f"runtime.spec.plain.{module}", name)

    def base(self) -> str:
        return self._add("runtime.spec.plain.base", "SpecStruct")

    def mixin(self, cls: type) -> str:
        assert cls.__module__ == "runtime.spec.methods", f"{cls}: mixins live in spec.methods"
        return self._add(cls.__module__, cls.__name__)

    def lines(self) -> list[str]:
        """The imports, grouped and sorted as ruff's isort wants them."""
        sections = [
            [f"from typing import {', '.join(sorted(self.typing))}"] if self.typing else [],
            ["import msgspec"] if self.msgspec else [],
            [
                f"from {m} import {', '.join(sorted(n))}"
                for m, n in sorted(self.from_modules.items())
            ],
        ]
        return [line for s in sections if s for line in [*s, ""]]


def _default(info: FieldInfo, imports: _Imports) -> str:
    """` = value`, ` = msgspec.field(...)`, or nothing for a required field without alias."""
    arguments = []
    if info.default_factory is not None:
        factory: Any = info.default_factory
        if factory in (list, dict):
            arguments.append(f"default_factory={factory.__name__}")
        elif isinstance(factory, type) and issubclass(factory, BaseModel):
            arguments.append(f"default_factory={imports.cls(factory)}")
        else:
            value = factory()
            assert isinstance(value, list | dict) and _plain(value), (info, value)
            arguments.append(f"default_factory=lambda: {value!r}")
    elif not info.is_required():
        value = str(info.default) if isinstance(info.default, HttpUrl) else info.default
        assert _plain(value), (info, value)
        arguments.append(f"default={value!r}")
    if info.alias is not None:
        arguments.append(f"name={info.alias!r}")
    if not arguments:
        return ""
    if len(arguments) == 1 and arguments[0].startswith("default="):
        return f" = {arguments[0].removeprefix('default=')}"
    imports.msgspec = True
    return f" = msgspec.field({', '.join(arguments)})"


def _plain(value: Any) -> bool:
    """A JSON value whose repr is Python that makes it again."""
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return value is None or isinstance(value, str | int | float | bool)


def _union_aliases() -> dict[tuple[Any, ...], tuple[str, str]]:
    """The models' named discriminated unions (`ModelConfig`, `ToolConfig`…), by members
    (in the union's order)."""
    found: dict[tuple[Any, ...], tuple[str, str]] = {}
    for module in MODULES:
        for name, value in vars(import_module(f"runtime.spec.{module}")).items():
            if get_origin(value) is Annotated and not name.startswith("_"):
                union, *meta = get_args(value)
                discriminated = any(isinstance(m, FieldInfo) and m.discriminator for m in meta)
                if discriminated and get_origin(union) in (Union, types.UnionType):
                    found.setdefault(get_args(union), (module, name))
    return found


def _formatted(name: str, text: str) -> str:
    """`text` as ruff writes it (imports sorted, lines wrapped), like the rest of the code."""
    path = str(TARGET / name)
    fmt = ["format", "--quiet", "--stdin-filename", path, "-"]
    for command in (
        fmt,
        ["check", "--select", "I", "--fix", "--quiet", "--stdin-filename", path, "-"],
        fmt,
    ):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *command], input=text, cwd=ROOT,
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"ruff {command[0]} on {name}: {done.stdout}{done.stderr}")
        text = done.stdout
    return text


def drifted() -> list[str]:
    """The files of runtime/spec/plain/ that differ from what the models give."""
    wanted = generate()
    return sorted(
        name
        for name, text in wanted.items()
        if not (TARGET / name).exists() or (TARGET / name).read_text(encoding="utf-8") != text
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the files drifted")
    args = parser.parse_args(argv)
    if args.check:
        stale = drifted()
        for name in stale:
            print(f"runtime/spec/plain/{name} differs from the models: run "
                  "python -m infra.sam.plain_spec", file=sys.stderr)  # fmt: skip
        return 1 if stale else 0
    for name, text in generate().items():
        (TARGET / name).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
