"""Stage what `sam build` builds: the functions' code and the dependency layers.

`template.yaml` points every function at `.agentfn/package/` (CodeUri) and each layer at
`.agentfn/layers/<name>/` (infra.sam.layers). This module fills those folders:

- the package: `runtime/`, `handlers/`, the project's tools package and the compiled spec,
  with a Makefile that copies them and compiles them with the runtime's Python. Tests,
  `infra/`, moto and the CLI's own build-time dependencies (PyYAML, jsonschema) never reach
  a Lambda, nor do third-party packages: those are in the layers.
- each layer: a Makefile, `layer.json` (requirements, those of the layer beneath, the
  platform, what to prune) and `layer_build.py` (infra.sam.layer_build), which installs and
  compiles it.

`python3.X` (the runtime's Python) must be on PATH for `sam build`, as for any Python
function SAM builds; `sam build --use-container` brings its own.

A large template's state machine definitions go next to it, in `.agentfn/statemachines/`
(outside the Lambda package), where its `DefinitionUri`s point.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import handlers
import infra.sam.layer_build
import runtime
from infra.sam.layers import LAYERS_DIR, Layer, layers
from infra.sam.template import PACKAGE_DIR, SPEC_FILE, STATE_MACHINES_DIR, definition_files
from runtime.spec import AgentfnSpec
from runtime.spec.databases import SqliteDatabase
from runtime.spec.knowledge import LocalKnowledgeBase

_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".DS_Store")
BUILDER = "layer_build.py"
#: Amazon Linux's glibc under each Lambda Python runtime (2 for 3.11, 2023 after).
GLIBC_MINOR = {"python3.11": 26}
GLIBC_MINOR_AL2023 = 34


def requirements(spec: AgentfnSpec) -> list[str]:
    """Every third-party requirement of the stack's functions (boto3 comes with Lambda)."""
    return [r for layer in layers(spec) for r in layer.requirements]


#: The open protocols' code (runtime.protocols, handlers.a2a/mcp): shipped only to a stack
#: that serves an agent over A2A/MCP or asks a remote agent, so every other function's own
#: code stays as small as before (it never imports them: their routes do not exist there).
PROTOCOL_CODE = (
    "runtime/protocols",
    "handlers/a2a.py",
    "handlers/mcp.py",
    "handlers/protocol_http.py",
)


#: The triggers' code (runtime.triggers, the trigger function): shipped only to a stack whose
#: agents or workflows declare triggers (nothing else imports it).
TRIGGER_CODE = ("runtime/triggers", "handlers/trigger.py")


def drop_unused_protocols(spec: AgentfnSpec, target: Path) -> None:
    """Leave out the code of features the spec does not use: the open protocols' and the
    triggers' (each function's own code is unpacked at every cold start)."""
    from infra.sam.layers import serves

    unused: list[str] = []
    if not (serves(spec, "a2a") or serves(spec, "mcp") or spec.remote_agents):
        unused += PROTOCOL_CODE
    owners = [a.triggers for a in spec.agents.values()]
    if not any(owners + [w.triggers for w in spec.workflows.values()]):
        unused += TRIGGER_CODE
    for relative in unused:
        path = target / relative
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def stage_package(
    spec: AgentfnSpec, project_dir: Path, template_dir: Path, runtime_name: str | None = None
) -> Path:
    """(Re)create the package and layer folders next to the template; the package's path."""
    python = runtime_name or spec.deployment.runtime
    target = template_dir / PACKAGE_DIR
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    names = []
    for package in (runtime, handlers):
        assert package.__file__ is not None
        source = Path(package.__file__).resolve().parent
        shutil.copytree(source, target / source.name, ignore=_IGNORE)
        names.append(source.name)
    drop_unused_protocols(spec, target)
    if not spec.deployment.snapstart:  # imported only at a SnapStart init: ship what runs
        (target / "handlers" / "snapshot.py").unlink()
    tools = project_dir / spec.tools_package
    if tools.is_dir():
        shutil.copytree(tools, target / spec.tools_package, ignore=_IGNORE)
        names.append(spec.tools_package)
    for database in spec.databases.values():  # SQLite files ship with the code (read-only)
        if isinstance(database, SqliteDatabase) and (project_dir / database.path).is_file():
            (target / database.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(project_dir / database.path, target / database.path)
            top = Path(database.path).parts[0]
            names += [] if top in names else [top]
    names += stage_knowledge_indexes(spec, project_dir, target)
    for source, relative in mcp_files(spec, project_dir):  # stdio servers' own files
        if relative.parts[0] == spec.tools_package:
            continue  # shipped with the tools package
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target / relative, ignore=_IGNORE, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target / relative)
        names += [] if relative.parts[0] in names else [relative.parts[0]]
    (target / SPEC_FILE).write_text(
        json.dumps(spec.to_compiled(), indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    names.append(SPEC_FILE)
    code = f'$(PYTHON) {BUILDER} code "$(ARTIFACTS_DIR)" {" ".join(sorted(names))}'
    _makefile(target, python, "build-%", code, "the functions' code (every function's)")
    stage_layers(spec, template_dir, python)
    stage_definitions(spec, template_dir)
    return target


def mcp_files(spec: AgentfnSpec, project_dir: Path) -> list[tuple[Path, Path]]:
    """(file, its path in the project) for each local file a deployed stdio MCP server is
    started from: its `command` or `args` written as relative paths (runtime.tools.paths), so
    the package holds them where the server looks. A ValueError names one outside the project:
    it would not be deployed."""
    from runtime.spec.tools import StdioMcpServer
    from runtime.tools.paths import is_path

    used = {
        ref.removeprefix("mcp:").partition("/")[0]
        for agent in spec.agents.values()
        for ref in agent.tools
        if ref.startswith("mcp:")
    }
    root = project_dir.resolve()
    found: list[tuple[Path, Path]] = []
    for name in sorted(used):
        config = spec.mcp_servers.get(name)
        if not isinstance(config, StdioMcpServer) or not config.enabled:
            continue
        folder = root / config.cwd if config.cwd else root
        written = [("command", config.command)] + [
            (f"args[{i}]", arg) for i, arg in enumerate(config.args)
        ]
        for key, value in written:
            if value.startswith("-") or "://" in value or Path(value).is_absolute():
                continue  # an option, a URL, or a path of the machine's own
            path = (folder / value).resolve()
            if not path.exists() or (key == "command" and not is_path(value)):
                continue  # a module name, a word, or a program looked up on PATH
            if not path.is_relative_to(root):
                raise ValueError(
                    f"mcp_servers.{name}.{key}: {value!r} is outside the project folder "
                    f"{root}, so it would not be deployed: move it into the project"
                )
            found.append((path, path.relative_to(root)))
    return found


def stage_knowledge_indexes(spec: AgentfnSpec, project_dir: Path, target: Path) -> list[str]:
    """The BM25 index of each local knowledge base, made now (bm25s runs at build time only)
    and shipped in the package: Lambda searches it without any library."""
    from runtime.tools.knowledge.local import INDEX_DIR, build_index

    local = {n: kb for n, kb in spec.knowledge_bases.items() if isinstance(kb, LocalKnowledgeBase)}
    if not local:
        return []
    (target / INDEX_DIR).mkdir()
    for name, kb in local.items():
        index = build_index(project_dir / kb.path, kb.chunk_chars)
        (target / INDEX_DIR / f"{name}.json").write_text(json.dumps(index), encoding="utf-8")
    return [INDEX_DIR]


def stage_layers(spec: AgentfnSpec, template_dir: Path, runtime_name: str) -> None:
    folder = template_dir / LAYERS_DIR
    if folder.exists():
        shutil.rmtree(folder)
    for layer in layers(spec):
        target = template_dir / layer.path
        target.mkdir(parents=True)
        (target / "layer.json").write_text(
            json.dumps(layer_config(spec, layer, runtime_name), indent=1) + "\n", encoding="utf-8"
        )
        command = f'$(PYTHON) {BUILDER} layer "$(ARTIFACTS_DIR)"'
        _makefile(target, runtime_name, f"build-{layer.logical_id}", command, layer.logical_id)


def layer_config(spec: AgentfnSpec, layer: Layer, runtime_name: str) -> dict[str, object]:
    return {
        "requirements": list(layer.requirements),
        "lower": list(layer.lower),
        "prune": list(layer.prune),
        "spared": list(layer.spared),
        "only": list(layer.only),
        "python": runtime_name.removeprefix("python"),
        "architecture": spec.deployment.architecture,
        "glibc_minor": GLIBC_MINOR.get(runtime_name, GLIBC_MINOR_AL2023),
    }


def _makefile(folder: Path, runtime_name: str, target: str, command: str, what: str) -> None:
    """A Makefile for `sam build` (BuildMethod: makefile), and the builder it runs."""
    assert infra.sam.layer_build.__file__ is not None
    shutil.copy(infra.sam.layer_build.__file__, folder / BUILDER)
    (folder / "Makefile").write_text(
        f"# GENERATED by `agentfn build`: how `sam build` builds {what}.\n"
        f"# PYTHON: the functions' runtime ({runtime_name}), so bytecode fits it.\n"
        f"PYTHON ?= {runtime_name}\n\n{target}:\n\t{command}\n",
        encoding="utf-8",
    )


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
