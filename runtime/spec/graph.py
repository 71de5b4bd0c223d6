"""Walks over a spec's references: an agent's sub-agents and its models' fallbacks.

Used by the engine (what a run depends on) and by the template emitter (what an agent's
function may call), so both always agree on an agent's reach.
"""

from runtime.spec.root import AgentfnSpec


def agent_closure(spec: AgentfnSpec, agent: str) -> list[str]:
    """The agent and every agent reachable through sub_agents, in discovery order."""
    seen: list[str] = []
    stack = [agent]
    while stack:
        name = stack.pop(0)
        if name not in seen and name in spec.agents:  # a remote agent runs elsewhere
            seen.append(name)
            stack.extend(sub.agent for sub in spec.agents[name].sub_agents)
    return seen


def model_closure(spec: AgentfnSpec, agents: list[str]) -> list[str]:
    """The models of these agents and, transitively, their fallbacks."""
    seen: list[str] = []
    stack = [spec.model_for(a) for a in agents]
    while stack:
        name = stack.pop(0)
        if name not in seen:
            seen.append(name)
            stack.extend(spec.models[name].fallbacks)
    return seen


def handoff_paths(spec: AgentfnSpec, agent: str) -> dict[str, list[str]]:
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
