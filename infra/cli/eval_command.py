"""`agentfn eval [FILES] [-k NAME] [--agent A] [--record] [--junit FILE] [--report FILE]`.

Exit codes: 0 every selected case passed; 1 a case failed; 2 usage, or an eval file or
the spec is invalid (each problem at file:line:column). The table goes to stdout,
everything else to stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from infra.evals.format import Case, LoadedEvals
    from infra.evals.runner import CaseResult
    from runtime.spec import AgentfnSpec

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", help="eval files (default: evals/*.yaml)")
    parser.add_argument("-k", metavar="NAME", help="only the cases whose name contains NAME")
    parser.add_argument("--agent", metavar="A", help="only the cases of agent (or workflow) A")
    parser.add_argument(
        "-f",
        "--file",
        help="the spec (default: the eval file's `spec:`, else "
        "agents.yaml beside the evals/ folder)",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="call the real models and (re)write each case's cassette beside its eval file",
    )
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML (for CI)")
    parser.add_argument("--report", metavar="FILE", help="write a report (.md, or .html)")
    parser.add_argument(
        "--env", metavar="NAME", help="apply environments.NAME of the spec (default: $AGENTFN_ENV)"
    )
    parser.set_defaults(func=eval_command)


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _files(given: list[str]) -> list[Path]:
    if given:
        return [Path(f) for f in given]
    folder = Path("evals")
    return sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])


def eval_command(args: argparse.Namespace) -> int:
    from infra.checks.environments import selected as environment
    from infra.checks.validate import validate_file
    from infra.evals.format import load_eval_file, reference_problems

    files = _files(args.files)
    if not files:
        _err("agentfn eval: no eval files: give FILES, or put them in evals/*.yaml")
        return EXIT_USAGE
    override = Path(args.file) if args.file else None
    loaded = [load_eval_file(path, override) for path in files]
    problems = [str(p) for item in loaded for p in item.problems]
    specs = {}
    for item in loaded:
        if item.evals is None or item.spec_path in specs:
            continue
        result = validate_file(item.spec_path, environment(args.env))
        if not result.ok:
            problems += [str(issue) for issue in result.issues]
        specs[item.spec_path] = result.spec
    for item in loaded:
        spec = specs.get(item.spec_path)
        if item.evals is not None and spec is not None:
            problems += [str(p) for p in reference_problems(item, spec)]
    if problems:
        for line in problems:
            _err(line)
        _err(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found.")
        return EXIT_USAGE
    selected = {
        item.path: [
            case
            for case in item.evals.cases  # type: ignore[union-attr]
            if (args.k is None or args.k in case.name)
            and (args.agent is None or args.agent == case.target)
        ]
        for item in loaded
    }
    count = sum(len(cases) for cases in selected.values())
    if not count:
        _err("agentfn eval: no case selected (check -k and --agent)")
        return EXIT_USAGE
    _err(
        f"running {count} case{'s' if count != 1 else ''} of {len(files)} file(s)"
        + (" against the real models, recording cassettes" if args.record else "")
    )
    results: list[CaseResult] = []
    for spec_path, spec in specs.items():
        assert spec is not None  # an invalid spec was reported above
        results += _run_spec(spec_path, spec, loaded, selected, args.record)
    return _finish(results, args)


def _run_spec(
    spec_path: Path,
    spec: AgentfnSpec,
    loaded: list[LoadedEvals],
    selected: dict[Path, list[Case]],
    record: bool,
) -> list[CaseResult]:
    from infra.cli.run_setup import prepare_project, stack_clients
    from infra.evals.runner import run_file

    mine = [item for item in loaded if item.spec_path == spec_path and selected[item.path]]
    if not mine:
        return []
    prepare_project(str(spec_path))
    results: list[CaseResult] = []
    # Replays need nothing real: every AWS call is moto's, in memory. Recording keeps the
    # stack's own resources local (.agentfn/local/) and lets models reach the real APIs.
    with stack_clients(str(spec_path), offline=not record) as clients:
        for item in mine:
            results += run_file(spec, item, selected[item.path], clients, record)
    return results


def _finish(results: list[CaseResult], args: argparse.Namespace) -> int:
    from infra.evals.report import junit, table, write_report

    print(table(results), flush=True)
    if args.junit:
        Path(args.junit).parent.mkdir(parents=True, exist_ok=True)
        Path(args.junit).write_text(junit(results), encoding="utf-8")
        _err(f"wrote {args.junit}")
    if args.report:
        write_report(Path(args.report), results)
        _err(f"wrote {args.report}")
    if args.record:
        saved = sorted({r.cassette_path for r in results if r.cassette_path})
        for path in saved:
            _err(f"recorded {path}")
    return EXIT_OK if all(r.passed for r in results) else EXIT_FAILED
