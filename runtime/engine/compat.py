"""Whether a run may continue under a changed spec.

A run records the spec hash it started with and an *agent hash*: the hash of everything
its behaviour depends on (the agent, its models and fallbacks, its tools and MCP servers,
its sub-agents, recursively, and the defaults and tools package). A new spec is
compatible when the agent hash is unchanged: editing another agent, or adding one, does not
strand in-flight runs; changing anything this run relies on ends it with SPEC_CHANGED
rather than silently continuing on different rules.

Values are hashed without the keys left at their defaults, so a new agentfn version that
adds a setting (with a default that keeps today's behaviour) does not end every run in
flight when it is deployed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import msgspec

from runtime.spec.graph import agent_closure, model_closure
from runtime.spec.plain import AgentfnSpec
from runtime.spec.plain.base import set_values

#: Hashes by spec object and agent: a spec is not changed once loaded, and every start and
#: advance asks (the whole agent serialised and hashed: milliseconds for a long script).
#: Each entry keeps its spec alive, so an id is never reused while it is here.
_known: dict[tuple[int, str], tuple[AgentfnSpec, str]] = {}


def agent_hash(spec: AgentfnSpec, agent: str) -> str:
    known = _known.get((id(spec), agent))
    if known is not None and known[0] is spec:
        return known[1]
    found = _agent_hash(spec, agent)
    if len(_known) >= 256:
        _known.clear()
    _known[(id(spec), agent)] = (spec, found)
    return found


def _agent_hash(spec: AgentfnSpec, agent: str) -> str:
    agents = agent_closure(spec, agent)
    models = model_closure(spec, agents)
    refs = {r for a in agents for r in spec.agents[a].tools}
    tools = sorted(r for r in refs if r in spec.tools)
    servers = sorted(
        {r.removeprefix("mcp:").partition("/")[0] for r in refs if r.startswith("mcp:")}
    )
    relevant: dict[str, Any] = {
        # What starts a run (its triggers) is not how it runs: editing one fails no run.
        "agents": {a: _set(msgspec.structs.replace(spec.agents[a], triggers=[])) for a in agents},
        "models": {m: _set(spec.models[m]) for m in models},
        "tools": {t: _set(spec.tools[t]) for t in tools},
        "mcp": {s: _set(spec.mcp_servers[s]) for s in servers},
        "defaults": _set(spec.defaults),
        "tools_package": spec.tools_package,
    }
    if spec.hooks:  # top-level hooks apply to every agent
        relevant["hooks"] = [_set(h) for h in spec.hooks]
    canonical = json.dumps(relevant, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _set(section: Any) -> Any:
    """What the spec sets, defaults left out (tags such as `provider` are kept): the same
    JSON the validated models give (runtime.spec.plain.base.set_values), so the hashes of
    runs started before the run-time structs existed still match."""
    return set_values(section)
