"""`agentfn init [DIR]`: a project a user owns, outside agentfn's own repository.

What it writes is the smallest project that shows every moving part and runs offline at
once: a spec with one agent on a `scripted` model that calls one Python tool, the tools
package holding that tool, a pytest test that runs the agent the way `agentfn run` does, the
JSON Schema the spec points editors at, a `.gitignore` for local state and build output, and
a README with the next commands. It never overwrites a file: an existing one is reported
and the command exits 1 having written nothing.
"""

from __future__ import annotations

from pathlib import Path

SPEC = """\
# yaml-language-server: $schema=./agents.schema.json
#
# `{agent}` runs offline on a `scripted` model (its answers are written below), so
# `agentfn run {agent} "hi"` works at once. To use a real model, add one under `models:`
# (README: "Use a real model") and point the agent at it.
version: 1

models:
  offline:
    provider: scripted
    script:
      - text: "I will count the words first."
        tool_calls: [{{name: word_count, arguments: {{text: "hello from {project}"}}}}]
      - text: "Your text has 3 words."

tools:
  word_count:
    type: python
    handler: tools.text:word_count
    description: Count the words of a text.
    effect: read_only

agents:
  {agent}:
    description: Answers questions about a text, counting its words with a tool.
    model: offline
    system_prompt: "You help with texts. Today is {{date}}."
    tools: [word_count]
    max_turns: 5
"""

TOOLS_INIT = '"""The project\'s Python tools: `handler: tools.MODULE:FUNCTION` in agents.yaml."""\n'

TOOL = '''\
"""Tools are plain functions: the model's arguments arrive as keyword arguments, the input
schema comes from the type hints (or the spec's `input_schema`), and the return value (JSON-able,
a pydantic model, or text) is what the model reads. An exception is reported to the model as
the tool's error; the run carries on. See docs/spec.md, "Python tools"."""

from __future__ import annotations


def word_count(text: str) -> dict[str, int]:
    """Count the words of `text`."""
    return {"words": len(text.split())}
'''

TEST = '''\
"""Runs the agent offline, as `agentfn run` does (embedded AWS, scripted model)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def agentfn(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infra.cli", *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_spec_is_valid() -> None:
    done = agentfn("validate")
    assert done.returncode == 0, done.stderr


def test_the_agent_counts_words_with_its_tool() -> None:
    done = agentfn("run", "{agent}", "How many words?", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded"
    [call] = result["tool_calls"]
    assert call["tool_name"] == "word_count" and call["output"] == {{"words": 3}}


def test_the_tool_alone() -> None:
    sys.path.insert(0, str(PROJECT))
    from tools.text import word_count

    assert word_count("one two") == {{"words": 2}}
'''

GITIGNORE = """\
# agentfn: local state, build output
.agentfn/
.aws-sam/
samconfig.toml
# secrets for local runs (AGENTFN_SECRET_*)
.env
__pycache__/
.venv/
.pytest_cache/
"""

README = """\
# {project}

Agents compiled by [agentfn](https://pypi.org/project/agentfn/) into AWS Lambda functions.

```sh
agentfn validate                      # check agents.yaml (file:line for every problem)
agentfn run {agent} "How many words?"  # run it offline, on the embedded AWS
python -m pytest                      # the project's tests
agentfn dev                           # the HTTP API and a console on http://127.0.0.1:8321
agentfn build                         # template.yaml for `sam build && sam deploy --guided`
```

- `agents.yaml`: models, tools, agents (editor completion from `agents.schema.json`).
- `tools/`: the Python tools the spec names (`handler: tools.text:word_count`); a
  `tools/requirements.txt` lists what they import beyond the standard library.
- `tests/`: runs the agent offline with its `scripted` model.
"""

AGENT = "assistant"


def files(project: str) -> dict[str, str]:
    """Relative path → content of the scaffold for a project named `project`."""
    from infra.cli.spec_files import json_schema

    agent = AGENT
    return {
        "agents.yaml": SPEC.format(agent=agent, project=project),
        "agents.schema.json": json_schema(),
        "tools/__init__.py": TOOLS_INIT,
        "tools/text.py": TOOL,
        "tools/requirements.txt": "# third-party packages your tools import, one per line\n",
        "tests/__init__.py": "",
        "tests/test_agent.py": TEST.format(agent=agent),
        ".gitignore": GITIGNORE,
        "README.md": README.format(project=project, agent=agent),
    }


def init_project(target: Path) -> tuple[list[Path], list[Path]]:
    """Write the scaffold into `target` (made if missing): (written, already there). When any
    file is already there nothing is written."""
    project = target.resolve().name or "agents"
    planned = {target / rel: text for rel, text in files(project).items()}
    existing = [path for path in planned if path.exists()]
    if existing:
        return [], existing
    for path, text in planned.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(planned), []
