"""Validation of `remote_agents` (runtime.spec.protocols.RemoteAgent) against the agents:
a remote agent is only ever asked (`as: tool`), and its name is not also a local agent's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from infra.checks.issues import RefProblem


def remote_handoff(name: str) -> str:
    return (
        f"{name!r} is a remote A2A agent: it can only be asked, write "
        f"{{agent: {name}, as: tool}} (ask_{name}(task))"
    )


def remote_name_problems(agents: dict[str, Any], remote: dict[str, Any]) -> Iterator[RefProblem]:
    for name in remote:
        if name in agents:
            yield RefProblem(
                ("remote_agents", name),
                f"{name!r} is also a local agent; give the remote one another name",
                at_key=True,
            )
