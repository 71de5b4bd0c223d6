"""Walks over a spec's references: an agent's sub-agents, its models' fallbacks, its hooks.

Used by the engine (what a run depends on) and by the template emitter and the checks (what
an agent's function may call), so both always agree on an agent's reach. They read either
form of the spec (the validated models at build time, runtime.spec.plain at run time), and
import neither.
"""

from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from runtime.spec import plain
    from runtime.spec.hooks import HookConfig
    from runtime.spec.root import AgentfnSpec

    AnySpec = AgentfnSpec | plain.AgentfnSpec


def agent_closure(spec: "AnySpec", agent: str) -> list[str]:
    """The agent and every agent reachable through sub_agents, in discovery order."""
    seen: list[str] = []
    stack = [agent]
    while stack:
        name = stack.pop(0)
        if name not in seen and name in spec.agents:  # a remote agent runs elsewhere
            seen.append(name)
            stack.extend(sub.agent for sub in spec.agents[name].sub_agents)
    return seen


def model_closure(spec: "AnySpec", agents: list[str]) -> list[str]:
    """The models of these agents and, transitively, their fallbacks."""
    seen: list[str] = []
    stack = [spec.model_for(a) for a in agents]
    while stack:
        name = stack.pop(0)
        if name not in seen:
            seen.append(name)
            stack.extend(spec.models[name].fallbacks)
    return seen


def handoff_paths(spec: "AnySpec", agent: str) -> dict[str, list[str]]:
    """Every agent a conversation with `agent` can be handed to, with the shortest chain of
    handoffs that reaches it (the agent itself included)."""
    paths = {agent: [agent]}
    queue = [agent]
    while queue:
        current = queue.pop(0)
        for sub in spec.agents[current].sub_agents:
            if sub.as_ == "handoff" and sub.agent not in paths:
                paths[sub.agent] = [*paths[current], sub.agent]
                queue.append(sub.agent)
    return paths


@overload
def agent_hooks(spec: "AgentfnSpec", agent: str) -> "list[tuple[str, HookConfig]]": ...
@overload
def agent_hooks(spec: "plain.AgentfnSpec", agent: str) -> "list[tuple[str, plain.HookConfig]]": ...
def agent_hooks(spec: Any, agent: str) -> list[tuple[str, Any]]:
    """The hooks that apply to `agent`, in order (top level, defaults, the agent; each in
    file order), with the key path that names each in events and warnings."""
    hooks: list[tuple[str, Any]] = [(f"hooks[{i}]", h) for i, h in enumerate(spec.hooks)]
    hooks += [(f"defaults.hooks[{i}]", h) for i, h in enumerate(spec.defaults.hooks)]
    hooks += [(f"agents.{agent}.hooks[{i}]", h) for i, h in enumerate(spec.agents[agent].hooks)]
    return hooks
