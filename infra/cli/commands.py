"""`agentfn` command line: validate, schema, build, run, dev, db-grants, and the HTTP API
commands.

Exit codes: 0 success; 1 the spec is invalid, a check failed or a run failed; 2 usage.
Diagnostics go to stderr; stdout carries only what was asked for (a schema, a template
path, a result), so the output can be piped.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from infra.checks.validate import validate_file
from infra.cli.spec_files import json_schema
from infra.cli.spec_files import load as _load
from infra.cli.spec_files import report as _report
from infra.cli.spec_files import validated as _validated
from runtime.spec import AgentfnSpec

DEFAULT_SPEC = "agents.yaml"
DEFAULT_TEMPLATE = "template.yaml"
SCHEMA_PATH = Path("schema") / "agents.schema.json"


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _imports_fail(spec: AgentfnSpec, file: str) -> bool:
    """Report each Python tool whose module does not import (infra.checks.tool_imports), located
    like any problem; True when there is one."""
    from infra.checks.issues import format_path
    from infra.checks.tool_imports import import_problems
    from infra.checks.yamlsrc import load_yaml, read_spec_text

    found = list(import_problems(spec))
    if not found:
        return False
    _, source = load_yaml(read_spec_text(Path(file)))
    for problem in found:
        _, at = source.locate(problem.path, key=problem.at_key)
        _err(f"{file}:{at.line}:{at.column}: {format_path(problem.path)}: {problem.message}")
    _err(f"{len(found)} problem{'s' if len(found) != 1 else ''} found.")
    return True


def cmd_validate(args: argparse.Namespace) -> int:
    result = validate_file(Path(args.file))
    if not result.ok:
        _report(result)
        return 1
    spec = result.spec
    assert spec is not None
    if _imports_fail(spec, args.file):
        return 1
    print(
        f"{args.file}: valid — {len(spec.agents)} agents, {len(spec.tools)} tools, "
        f"{len(spec.models)} models, {len(spec.mcp_servers)} MCP servers, "
        f"{len(spec.workflows)} workflows "
        f"(spec hash {spec.spec_hash()})" + _environments_note(result.environments)
    )
    _warn(Path(args.file), result.data, spec)
    return 0


def _environments_note(declared: list[str]) -> str:
    return f"; environments checked too: {', '.join(declared)}" if declared else ""


def _warn(path: Path, data: object, spec: AgentfnSpec) -> None:
    """`file:line:column: key.path: warning: …` for what is valid but likely to fail."""
    from infra.checks.issues import format_path
    from infra.checks.references import RefProblem, spec_warnings
    from infra.checks.tool_imports import undeployed_imports
    from infra.checks.yamlsrc import load_yaml, read_spec_text

    warnings = spec_warnings(data)
    warnings += [RefProblem(at, message) for at, message in undeployed_imports(spec)]
    if warnings:
        _, source = load_yaml(read_spec_text(path))
        for warning in warnings:
            _, at = source.locate(warning.path, key=warning.at_key)
            _err(
                f"{path}:{at.line}:{at.column}: {format_path(warning.path)}: warning: "
                f"{warning.message}"
            )


def cmd_schema(args: argparse.Namespace) -> int:
    text = json_schema()
    if args.check:
        current = Path(args.check).read_text(encoding="utf-8") if Path(args.check).exists() else ""
        if current != text:
            _err(f"{args.check} is out of date; run: agentfn schema -o {args.check}")
            return 1
        return 0
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text, encoding="utf-8")
        _err(f"wrote {args.output}")
        return 0
    sys.stdout.write(text)
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    from infra.checks.deploy_warnings import scripted_models
    from infra.checks.environments import selected
    from infra.sam.limits import OUTPUTS, RESOURCES, TEMPLATE_BYTES, check
    from infra.sam.package import mcp_files, stage_package
    from infra.sam.template import build_template, render

    result = _validated(args.file, args.env)
    if result is None:
        return 1
    spec = result.spec
    assert spec is not None
    if _imports_fail(spec, args.file):
        return 1
    try:
        template = build_template(spec, runtime=args.runtime)
    except ValueError as exc:  # what only a deployment needs (code_execute's VPC, …)
        _err(f"{args.file}: cannot build a template: {exc}")
        return 1
    text = render(template)
    limits = check(template, text, len(spec.agents), len(spec.workflows))
    for error in limits.errors:
        _err(f"{args.file}: cannot deploy as one stack: {error}")
    if limits.errors:
        return 1
    warnings = [
        w.located(args.file, result.source, result.shown)
        for w in scripted_models(spec, selected(args.env))
    ]
    warnings += [f"{args.file}: warning: {warning}" for warning in limits.warnings]
    for warning in warnings if args.strict or not args.check else []:  # --check compares only
        _err(warning)
    if args.strict and warnings:
        _err(f"{args.file}: --strict: refusing to build with {len(warnings)} warning(s)")
        return 1
    output = Path(args.output)
    if args.check:
        current = output.read_text(encoding="utf-8") if output.exists() else ""
        if current == text:
            _err(f"{output} is up to date with {args.file}.")
            return 0
        diff = difflib.unified_diff(
            current.splitlines(), text.splitlines(), str(output), "generated", lineterm="", n=1
        )
        for line in list(diff)[:40]:
            _err(line)
        _err(f"{output} differs from what {args.file} produces; run: agentfn build")
        return 1
    project, where = Path(args.file).resolve().parent, output.resolve().parent
    try:
        mcp_files(spec, project)  # a server's file outside the project would not deploy
    except ValueError as exc:
        _err(f"{args.file}: cannot build a template: {exc}")
        return 1
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    package = stage_package(spec, project, where, args.runtime)
    f = limits.figures
    _err(f"wrote {output} ({len(spec.agents)} agents) and staged the Lambda package in {package}")
    _err(
        f"stack: {f.resource_count} of {RESOURCES} resources after the SAM transform, "
        f"{f.outputs} of {OUTPUTS} outputs, {f.roles} IAM roles, template "
        f"{f.body_bytes // 1000:,} KB of {TEMPLATE_BYTES // 1000:,} KB"
    )
    for note in limits.notes:
        _err(f"note: {note}")
    _err("next: sam validate --lint && sam build && sam deploy --guided")
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    from infra.cli.scaffold import AGENT, init_project

    target = Path(args.directory)
    written, existing = init_project(target)
    if existing:
        for path in existing:
            _err(f"{path}: already exists")
        _err("agentfn init writes into a new or empty folder and never overwrites: nothing written")
        return 1
    for path in written:
        _err(f"wrote {path}")
    where = "" if target.resolve() == Path.cwd().resolve() else f"cd {args.directory} && "
    _err(f'next: {where}agentfn validate && agentfn run {AGENT} "How many words?"')
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from infra.cli.run_cli import EXIT_USAGE, run_command

    spec = _load(args.file, args.env)
    if spec is None:
        return EXIT_USAGE
    if args.agent in spec.workflows:
        from infra.cli.run_workflow import run_workflow_command

        if args.max_turns is not None:
            _err("--max-turns is for an agent; a workflow step sets its own `max_turns:`")
            return EXIT_USAGE

        return run_workflow_command(args, spec)
    if args.agent not in spec.agents:
        from infra.checks.issues import did_you_mean

        names = [*spec.agents, *spec.workflows]
        hint = did_you_mean(args.agent, names)
        _err(f"unknown agent or workflow {args.agent!r}{hint}; known: {', '.join(names)}")
        return EXIT_USAGE
    if args.max_turns is not None:
        from runtime.engine.state import check_max_turns
        from runtime.errors import InvalidRequest

        try:
            check_max_turns(spec, args.agent, args.max_turns)
        except InvalidRequest as exc:
            _err(f"--{exc}".replace("max_turns:", "max-turns:", 1))
            return EXIT_USAGE
    return run_command(args, spec)


def cmd_db_grants(args: argparse.Namespace) -> int:
    from infra.sam.database_grants import aurora_databases, grants_sql

    spec = _load(args.file)
    if spec is None:
        return 1
    names = args.database or aurora_databases(spec)
    if not names:
        _err(f"{args.file}: no aurora database: SQLite's second wall is its authorizer")
        return 1
    try:
        print("\n".join(grants_sql(spec, name) for name in names), end="")
    except ValueError as exc:
        _err(f"agentfn db-grants: {exc}")
        return 1
    return 0


def _add_env(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env",
        metavar="NAME",
        help="apply environments.NAME of the spec (default: $AGENTFN_ENV, else none)",
    )


def cmd_local(args: argparse.Namespace) -> int:
    """`agentfn local reset`: forget the runs `agentfn run` kept beside the spec."""
    from infra.local.local_state import reset, state_dir

    where = state_dir(args.file)
    if reset(where):
        _err(f"cleared the local state in {where}")
    else:
        _err(f"no local state in {where}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentfn", description="Serverless AI agents from agents.yaml."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("init", help="start a project of your own: agents.yaml, tools/, tests/")
    p.add_argument("directory", nargs="?", default=".", help="where (made if missing)")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser(
        "validate", help="check agents.yaml; report every problem at file:line:column"
    )
    p.add_argument("-f", "--file", default=DEFAULT_SPEC)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("schema", help="print the JSON Schema of agents.yaml")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.add_argument(
        "--check", metavar="FILE", help="exit 1 when FILE differs from the current schema"
    )
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser("build", help="generate template.yaml and stage the Lambda package")
    p.add_argument("-f", "--file", default=DEFAULT_SPEC)
    p.add_argument("-o", "--output", default=DEFAULT_TEMPLATE)
    p.add_argument("--check", action="store_true", help="exit 1 when the template is out of date")
    p.add_argument(
        "--runtime", help="override deployment.runtime (e.g. python3.11 to match a local build)"
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse to build when there is a warning, such as a scripted model (exit 1)",
    )
    _add_env(p)
    p.set_defaults(func=cmd_build)

    p = sub.add_parser(
        "db-grants", help="print the SQL of an Aurora role with only the spec's table rights"
    )
    p.add_argument("-f", "--file", default=DEFAULT_SPEC)
    p.add_argument("database", nargs="*", help="aurora databases (default: all of them)")
    p.set_defaults(func=cmd_db_grants)

    p = sub.add_parser("run", help="run an agent or a workflow on the embedded AWS (local state)")
    from infra.cli.run_cli import add_arguments

    add_arguments(p)
    _add_env(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("local", help="the local state `agentfn run` keeps (.agentfn/local/)")
    p.add_argument("action", choices=["reset"], help="reset: forget every run kept there")
    p.add_argument("-f", "--file", default=DEFAULT_SPEC)
    p.set_defaults(func=cmd_local)

    # -- agentfn dev and the HTTP API commands (infra/local/dev_server.py, infra/cli/api_client.py)
    from infra.cli.api_client import add_parsers as add_api_parsers
    from infra.local.dev_server import add_arguments as add_dev_arguments
    from infra.local.dev_server import dev_command

    p = sub.add_parser("dev", help="the whole stack on loopback: HTTP API + moto AWS endpoint")
    add_dev_arguments(p)
    _add_env(p)
    p.set_defaults(func=dev_command)
    add_api_parsers(sub)
    # -- end agentfn dev / HTTP API commands --
    return parser


#: Commands that only read a spec and write files: whatever goes wrong is one line, never a
#: traceback (the spec checks report every real problem; this is the last resort).
_ONE_LINE_ERRORS = {"validate", "build", "schema", "db-grants"}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if args.command not in _ONE_LINE_ERRORS:
            raise
        first = (str(exc).splitlines() or [""])[0][:300]
        _err(f"agentfn {args.command}: internal error: {type(exc).__name__}: {first}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
