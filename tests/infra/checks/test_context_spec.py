"""The spec side of context management: `compaction` settings validate with located errors,
an agent's compaction changes only the keys it sets, and tool definitions too large for the
model's window are refused at validation when the spec declares them."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.checks.validate import validate_file
from tests.infra.checks.test_validate_bad import _write_project, h

CASES = {
    "unknown compaction model": (
        h("""
        agents:
          a:
            description: d
            model: m
            compaction:
              model: tiny  #!
        """),
        "unknown model 'tiny'",
    ),
    "threshold out of range": (
        h("""
        defaults:
          compaction:
            threshold: 1.5  #!
        agents:
          a: {description: d, model: m}
        """),
        "less than or equal to 0.98",
    ),
    "window too small": (
        """
        version: 1
        models:
          m: {provider: scripted, script: [{text: hi}], context_window: 10}  #!
        agents:
          a: {description: d, model: m}
        """,
        "greater than or equal to 1024",
    ),
    "tools fill the window": (
        """
        version: 1
        models:
          m: {provider: scripted, script: [{text: hi}], context_window: 1024}
        tools:
          huge:
            type: http
            method: GET
            url: https://api.example.com/x
            description: "%s"
        agents:
          a:
            description: d
            model: m
            tools: [huge]  #!
        """
        % ("lookup " * 400),
        "of model 'm''s context window (1024 tokens)",
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_context_settings_are_reported_at_their_line(case: str, tmp_path: Path) -> None:
    text, message = CASES[case]
    spec, line = _write_project(tmp_path, text)
    result = validate_file(spec)
    assert not result.ok
    matching = [i for i in result.issues if message in i.message]
    assert matching, [str(i) for i in result.issues]
    assert matching[0].line == line, [str(i) for i in result.issues]


def test_an_agents_compaction_changes_only_the_keys_it_sets(tmp_path: Path) -> None:
    text = """
        version: 1
        models:
          m: {provider: scripted, script: [{text: hi}]}
          s: {provider: scripted, script: [{text: hi}]}
        defaults:
          compaction: {model: s, keep_turns: 5}
        agents:
          a:
            description: d
            model: m
            compaction: {threshold: 0.5}  #!
          b: {description: d, model: m}
        """
    spec_file, _ = _write_project(tmp_path, text)
    result = validate_file(spec_file)
    assert result.ok and result.spec is not None, [str(i) for i in result.issues]
    spec = result.spec
    a = spec.compaction_for("a")
    assert (a.threshold, a.model, a.keep_turns) == (0.5, "s", 5)
    assert spec.compaction_for("b").threshold == 0.8
    # The compiled spec reloads to the same settings.
    from runtime.spec import AgentfnSpec

    again = AgentfnSpec.model_validate(spec.to_compiled())
    assert again.compaction_for("a") == a and again.spec_hash() == spec.spec_hash()
