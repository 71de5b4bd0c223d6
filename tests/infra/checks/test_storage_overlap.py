"""An agent's storage prefix may not reach another agent's files (issue 22, point 11):
`storage_prefix: storage/` passed validation and the agent's `storage_read` listed and read
every other agent's default storage. Overlapping prefixes are refused at their line unless
every agent involved sets `storage_shared: true`."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.checks.validate import validate_file
from tests.infra.checks.test_validate_bad import _write_project, h

STORE = "[builtin:storage_read, builtin:storage_write]"
CASES = {
    "the whole default area": (
        h(f"""
        agents:
          spy:
            description: d
            model: m
            tools: {STORE}
            storage_prefix: storage/  #!
          victim: {{description: d, model: m, tools: {STORE}}}
        """),
        "storage_prefix 'storage/' holds 'storage/'",
    ),
    "the whole default area, alone": (
        h(f"""
        agents:
          spy:
            description: d
            model: m
            tools: {STORE}
            storage_prefix: storage/  #!
        """),
        "where every agent's default storage lies",
    ),
    "another agent's default prefix": (
        h(f"""
        agents:
          spy:
            description: d
            model: m
            tools: {STORE}
            storage_prefix: storage/victim/  #!
          victim: {{description: d, model: m, tools: {STORE}}}
        """),
        "storage_prefix 'storage/victim/' overlaps agent 'victim''s 'storage/victim/'",
    ),
    "shared on one side only": (
        h(f"""
        agents:
          a:
            description: d
            model: m
            tools: {STORE}
            storage_prefix: team/  #!
            storage_shared: true
          b: {{description: d, model: m, tools: {STORE}, storage_prefix: team/b/}}
        """),
        "storage_prefix 'team/' overlaps agent 'b''s 'team/b/'",
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_an_overlapping_storage_prefix_is_refused_at_its_line(case: str, tmp_path: Path) -> None:
    text, message = CASES[case]
    spec, line = _write_project(tmp_path, text)
    result = validate_file(spec)
    assert not result.ok
    matching = [issue for issue in result.issues if message in issue.message]
    assert matching, [str(issue) for issue in result.issues]
    assert matching[0].line == line and matching[0].file == str(spec)


def test_prefixes_of_their_own_or_shared_on_purpose_are_valid(tmp_path: Path) -> None:
    spec, _ = _write_project(
        tmp_path,
        h(f"""
        agents:
          a: {{description: d, model: m, tools: {STORE}, storage_prefix: team/, storage_shared: true}}
          b: {{description: d, model: m, tools: {STORE}, storage_prefix: team/b/, storage_shared: true}}
          c: {{description: d, model: m, tools: {STORE}, storage_prefix: "own/{{agent}}/"}}
          d: {{description: d, model: m, tools: {STORE}}}
          e: {{description: d, model: m, storage_prefix: storage/}}  #!
        """),
    )
    result = validate_file(spec)
    assert result.ok, [str(issue) for issue in result.issues]
