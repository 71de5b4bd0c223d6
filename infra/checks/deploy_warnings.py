"""What `agentfn build` warns of in a spec that is valid but should not be deployed as it is
(`--strict` refuses it): agents whose model, fallback or summariser is `scripted`, which
answers from its script, not a model, so a deployed agent would return canned answers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from infra.checks.issues import format_path
from infra.checks.yamlsrc import Path_, SourceMap
from runtime.spec import AgentfnSpec


@dataclass(frozen=True)
class DeployWarning:
    path: Path_
    message: str

    def located(self, file: str, source: SourceMap | None, shown: Callable[[Path_], Path_]) -> str:
        """`file:line:column: key.path: warning: …`, the path as written in the file."""
        line, column = 0, 0
        if source is not None:
            _, at = source.locate(self.path, key=True)
            line, column = at.line, at.column
        where = format_path(shown(self.path))
        return f"{file}:{line}:{column}: {where}: warning: {self.message}"


def models_of(spec: AgentfnSpec, agent: str) -> list[str]:
    """Every model a deployed agent can call: its own (or the default), its compaction's
    summariser, and their fallbacks, transitively."""
    start = [spec.model_for(agent)]
    summariser = spec.compaction_for(agent).model
    if summariser:
        start.append(summariser)
    found: list[str] = []
    while start:
        name = start.pop(0)
        if name in found or name not in spec.models:
            continue
        found.append(name)
        start += spec.models[name].fallbacks
    return found


def scripted_models(spec: AgentfnSpec, env: str | None) -> list[DeployWarning]:
    users: dict[str, list[str]] = {}
    for agent in spec.agents:
        for model in models_of(spec, agent):
            if spec.models[model].provider == "scripted":
                users.setdefault(model, []).append(agent)
    how = (
        f" in environment {env!r} or at the top level"
        if env
        else ", or replace it in an environment built with --env NAME (docs/spec.md: Environments)"
    )
    return [
        DeployWarning(
            ("models", model),
            f"scripted model {model!r} answers from its script, not a model; deployed, it "
            f"would answer agent{'s' if len(agents) > 1 else ''} {', '.join(agents)}: give "
            f"them a real model{how}",
        )
        for model, agents in users.items()
    ]
