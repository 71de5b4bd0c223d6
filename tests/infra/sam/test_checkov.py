"""checkov (pinned in scripts/dev.py, its own environment under .tools) over the generated
templates: the demo's and the full fixture's as `agentfn build` writes them, and the demo's as
CloudFormation would deploy it (after the SAM transform: the roles and permissions SAM adds).
Every finding must be accepted in checkov_skips.txt, with its reason; a new finding fails.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from infra.sam.template import build_template, render
from runtime.spec import AgentfnSpec
from tests.helpers import load_spec, tool_path
from tests.infra.cfn import sam_transform

SKIPS = Path(__file__).with_name("checkov_skips.txt")
TRIGGERS = Path(__file__).resolve().parents[2] / "fixtures" / "triggers" / "agents.yaml"


class Skip(NamedTuple):
    check: str
    resource: str
    reason: str


def _skips() -> list[Skip]:
    found: list[Skip] = []
    reason: list[str] = []
    for number, line in enumerate(SKIPS.read_text(encoding="utf-8").splitlines(), start=1):
        text = line.strip()
        if text.startswith("#"):
            reason.append(text.lstrip("# "))
        elif not text:
            reason = []
        else:
            check, resource = text.split()
            assert check.startswith("CKV"), f"{SKIPS.name}:{number}: not a check id: {check}"
            found.append(Skip(check, resource, " ".join(reason).strip()))
    return found


def _findings(paths: list[Path]) -> dict[Path, list[tuple[str, str]]]:
    """(check id, resource) of every failed check, by file. One checkov process scans every
    file (its start-up is most of a small file's scan; not --quiet: the passed checks show
    that each file was scanned). No network: --skip-download keeps checkov from fetching
    guidelines, CKV_SKIP_PACKAGE_UPDATE_CHECK from asking PyPI for a release."""
    env = {**os.environ, "CKV_SKIP_PACKAGE_UPDATE_CHECK": "true", "LOG_LEVEL": "ERROR"}
    files = [arg for path in paths for arg in ("-f", path.name)]
    result = subprocess.run(
        [tool_path("checkov"), *files, "--framework", "cloudformation",
         "--compact", "--skip-download", "-o", "json"],
        capture_output=True, text=True, timeout=600, env=env, cwd=paths[0].parent,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr[-3000:]  # 1: checks failed
    report: Any = json.loads(result.stdout)
    report = report[0] if isinstance(report, list) else report
    assert report["summary"]["parsing_errors"] == 0, report["summary"]
    by_name = {f"/{path.name}": path for path in paths}
    passed = Counter(by_name[r["file_path"]] for r in report["results"]["passed_checks"])
    for path in paths:  # it did scan each file
        assert passed[path] > 50, (path.name, passed[path], report["summary"])
    found: dict[Path, list[tuple[str, str]]] = {path: [] for path in paths}
    for failed in report["results"]["failed_checks"]:
        found[by_name[failed["file_path"]]].append((failed["check_id"], failed["resource"]))
    return found


def _accepted(finding: tuple[str, str], skip: Skip) -> bool:
    return finding[0] == skip.check and fnmatch.fnmatchcase(finding[1], skip.resource)


@pytest.fixture(scope="module")
def findings(
    demo_spec: AgentfnSpec, full_spec: AgentfnSpec, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[tuple[str, str]]]:
    folder = tmp_path_factory.mktemp("checkov")
    demo = build_template(demo_spec)
    files = {
        "demo template.yaml": ("demo.yaml", render(demo)),
        "full template.yaml": ("full.yaml", render(build_template(full_spec))),
        "triggers template.yaml": ("triggers.yaml", render(build_template(load_spec(TRIGGERS)))),
        "demo after the SAM transform": ("demo.json", json.dumps(sam_transform(demo), indent=1)),
    }
    paths = {}
    for label, (name, text) in files.items():
        paths[label] = folder / name
        paths[label].write_text(text, encoding="utf-8")
    found = _findings(list(paths.values()))
    return {label: found[path] for label, path in paths.items()}


@pytest.mark.slow  # checkov over four templates
def test_every_checkov_finding_is_an_accepted_one(
    findings: dict[str, list[tuple[str, str]]],
) -> None:
    skips = _skips()
    new = {
        label: [f for f in found if not any(_accepted(f, s) for s in skips)]
        for label, found in findings.items()
    }
    assert not any(new.values()), f"new checkov findings (fix, or accept in {SKIPS.name}): {new}"
    every = [f for found in findings.values() for f in found]
    unused = [s for s in skips if not any(_accepted(f, s) for f in every)]
    assert not unused, f"entries of {SKIPS.name} that match no finding any more: {unused}"


def test_every_accepted_finding_says_why() -> None:
    skips = _skips()
    assert skips
    for skip in skips:
        assert len(skip.reason) >= 40, f"{skip.check} {skip.resource}: no reason above it"
    # The front door's functions keep their reserved concurrency: never accepted without it.
    for name in ("ApiFunction", "LiveFunction", "SweeperFunction"):
        finding = ("CKV_AWS_115", f"AWS::Serverless::Function.{name}")
        assert not any(_accepted(finding, s) for s in skips), name
