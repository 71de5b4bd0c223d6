"""Hostile spec files: each is one located error (file:line:column), found in well under a
second and a few MB, and neither `agentfn validate` nor `agentfn build` prints a traceback.

Each file is checked in a child process under a memory cap and a timeout, so a regression
(the billion laughs used to take 83 s and 6.5 GB) fails the test instead of the machine.
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import ROOT

HEAD = "version: 1\nmodels:\n  m: {provider: scripted, script: [{text: hi}]}\n"
AGENT = "agents:\n  a: {description: d, model: m}\n"


def _laughs() -> str:
    lines = ["version: 1", 'l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 9):
        refs = ",".join([f"*l{level - 1}"] * 9)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n" + AGENT


def _deep_block(levels: int) -> str:
    body = "".join(" " * i + f"k{i}:\n" for i in range(levels)) + " " * levels + "x: 1\n"
    return HEAD + AGENT + "extra:\n" + textwrap.indent(body, "  ")


CASES: dict[str, tuple[bytes, str]] = {
    "billion laughs": (_laughs().encode(), "values once YAML aliases are expanded"),
    "deep flow nesting": (
        (HEAD + "agents: " + "[" * 5000 + "]" * 5000 + "\n").encode(),
        "nested more than 64 levels",
    ),
    "deep block nesting": (_deep_block(600).encode(), "nested more than 64 levels"),
    "5,000-digit number": (
        (HEAD.replace("scripted,", "scripted, max_tokens: " + "9" * 5000 + ",") + AGENT).encode(),
        "a number of 5000 characters",
    ),
    "not UTF-8": (
        (HEAD + AGENT.replace("d,", "caf\xe9,")).encode("latin-1"),
        "not UTF-8: byte 0xe9",
    ),
    "infinite retention": (
        (HEAD + "deployment: {retention: .inf}\n" + AGENT).encode(),
        "not a finite number",
    ),
    "recursive alias": (
        (HEAD + "x: &a [1, *a]\n" + AGENT).encode(),
        "used inside the value it names",
    ),
    "control character": ((HEAD + "x: \x07\n" + AGENT).encode(), "character U+0007 is not allowed"),
    "larger than 1 MiB": (
        (HEAD + AGENT + "# padding\n" * 110_000).encode(),
        "larger than 1024 KiB",
    ),
}

_DRIVER = """
import contextlib, io, json, sys, time, tracemalloc
from pathlib import Path
from infra.cli import commands as cli
from infra.checks.validate import validate_file

path, out = Path(sys.argv[1]), sys.argv[2]
started = time.perf_counter()
result = validate_file(path)
report = {"seconds": time.perf_counter() - started, "issues": [str(i) for i in result.issues]}
tracemalloc.start()
validate_file(path)
report["peak_bytes"] = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
for argv in (["validate", "-f", str(path)], ["build", "-f", str(path), "-o", out + "/t.yaml"]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = cli.main(argv)
        except BaseException as exc:
            code = "raised " + type(exc).__name__
    report[argv[0]] = {"code": code, "stderr": err.getvalue()}
print(json.dumps(report))
"""


def _cap_memory() -> None:
    limit = 2 * 1024**3
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_a_hostile_file_is_one_located_error_quickly(case: str, tmp_path: Path) -> None:
    content, message = CASES[case]
    spec = tmp_path / "agents.yaml"
    spec.write_bytes(content)
    if case == "billion laughs":
        assert len(content) < 512
    try:
        done = subprocess.run(
            [sys.executable, "-c", _DRIVER, str(spec), str(tmp_path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
            preexec_fn=_cap_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case}: still checking after 30 s")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    located = re.compile(rf"^{re.escape(str(spec))}:\d+:\d+: ")
    assert len(report["issues"]) == 1 and located.match(report["issues"][0]), report["issues"]
    assert message in report["issues"][0]
    assert report["seconds"] < 1.0, report["seconds"]
    assert report["peak_bytes"] < 32 * 1024**2, report["peak_bytes"]
    for command in ("validate", "build"):
        outcome = report[command]
        assert outcome["code"] == 1, (command, outcome)
        assert "Traceback" not in outcome["stderr"]
        assert located.match(outcome["stderr"]), (command, outcome["stderr"])


def test_every_limit_leaves_room_for_real_specs() -> None:
    """The shipped specs stay far from the limits (a tenth of the values, a hundredth of
    the size), so the limits never get in an author's way."""
    from infra.checks.yamlbounds import MAX_BYTES, MAX_VALUES, BoundedLoader

    for spec in (ROOT / "agents.yaml", ROOT / "tests" / "fixtures" / "full" / "agents.yaml"):
        loader = BoundedLoader(spec.read_text(encoding="utf-8"))
        loader.get_single_node()
        assert loader._values * 10 <= MAX_VALUES
        assert spec.stat().st_size * 100 <= MAX_BYTES


def test_the_cli_turns_an_unexpected_error_into_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from infra.cli import commands as cli
    from infra.cli import spec_files

    def broken(path: Path, env: str | None = None) -> None:
        raise RuntimeError("something nobody foresaw\nsecond line")

    monkeypatch.setattr(cli, "validate_file", broken)  # `validate`
    monkeypatch.setattr(spec_files, "validate_file", broken)  # `build` reads the spec there
    for command in (
        ["validate", "-f", "x.yaml"],
        ["build", "-f", "x.yaml", "-o", str(tmp_path / "t")],
    ):
        assert cli.main(command) == 2
        err = capsys.readouterr().err
        assert (
            err == f"agentfn {command[0]}: internal error: RuntimeError: something nobody foresaw\n"
        )
