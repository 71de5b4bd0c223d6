"""Values that are fine one by one but break a deployed run: waits that outlast the run's own
data or Step Functions' limits, and a storage prefix inside the engine's own S3 prefixes.

- An approval or clarification wait compiles into a Step Functions `TimeoutSeconds` (whole
  seconds, at least 1; a Standard execution lives at most a year) and must end before
  `deployment.retention` expires the run's state and message bodies: a run resumed after
  that finds nothing to resume.
- `session.ttl` keeps a session's history, whose bodies are S3 objects that expire with
  `deployment.retention`: a longer ttl would keep references to deleted bodies.
- `storage_prefix` is where `builtin:storage_write` writes what the model chooses; inside
  `tool-cache/`, `bodies/` or `results/` the model could overwrite the engine's records,
  and overlapping another storage agent's prefix (or holding the whole default `storage/`,
  where every agent's default prefix lies) it could read and overwrite that agent's files:
  refused unless every agent involved says `storage_shared: true`.

And one warning (the spec stays valid): an agent that offers more tools than a model request
may carry (OpenAI's 128) fails every model call. Only tools the spec names can be counted
here; an MCP server selected whole is counted at run time, where the excess is left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from infra.checks.issues import RefProblem, did_you_mean
from infra.checks.issues import mapping as _mapping
from infra.checks.yamlsrc import Path_
from runtime.spec.agents import RESERVED_PREFIXES
from runtime.spec.types import parse_duration
from runtime.tools.mcp.limits import MAX_TOOLS

if TYPE_CHECKING:
    from runtime.spec import AgentfnSpec

#: Step Functions Standard workflows run at most one year.
SFN_MAX_SECONDS = 365 * 86_400
DEFAULT_RETENTION = 30 * 86_400.0
DEFAULT_WAIT = 86_400.0  # defaults.approval_timeout and defaults.input_timeout


def check_run_limits(root: dict[str, Any]) -> Iterator[RefProblem]:
    deployment = _mapping(root.get("deployment"))
    retention = _seconds(deployment.get("retention", DEFAULT_RETENTION))
    if retention is None:
        return  # the model reports the value
    written = "retention" in deployment
    limit = f"deployment.retention ({_human(retention)}{'' if written else ', the default'})"
    defaults = _mapping(root.get("defaults"))
    waits: list[tuple[Path_, Any]] = []
    for key in ("approval_timeout", "input_timeout"):
        if key in defaults:
            waits.append((("defaults", key), defaults[key]))
        elif written and retention < DEFAULT_WAIT:
            yield RefProblem(
                ("deployment", "retention"),
                f"retention {_human(retention)} is shorter than defaults.{key} (24h, the "
                "default): runs would expire while they wait; set a longer retention or a "
                f"shorter defaults.{key}",
            )
    for name, raw in _mapping(root.get("agents")).items():
        agent = _mapping(raw)
        if "input_timeout" in agent:
            waits.append((("agents", name, "input_timeout"), agent["input_timeout"]))
        for i, rule in enumerate(agent.get("approval") or []):
            if isinstance(rule, dict) and "timeout" in rule:
                waits.append((("agents", name, "approval", i, "timeout"), rule["timeout"]))
        ttl = _seconds(_mapping(agent.get("session")).get("ttl"))
        if ttl is not None and ttl > retention:
            yield RefProblem(
                ("agents", name, "session", "ttl"),
                f"session ttl {_human(ttl)} is longer than {limit}: the session's message "
                "bodies expire with the retention; raise the retention or shorten the ttl",
            )
        yield from _check_storage_prefix(name, agent.get("storage_prefix"))
    yield from _check_storage_overlaps(_mapping(root.get("agents")))
    for path, value in waits:
        seconds = _seconds(value)
        if seconds is None:
            continue
        if seconds < 1:
            yield RefProblem(path, "a wait lasts at least 1s (Step Functions counts whole seconds)")
        elif seconds > SFN_MAX_SECONDS:
            yield RefProblem(
                path,
                f"a wait of {_human(seconds)} is longer than a Step Functions execution may "
                "run (1 year)",
            )
        elif seconds > retention:
            yield RefProblem(
                path,
                f"a wait of {_human(seconds)} is longer than {limit}: the run's state would "
                "expire while it waits; raise the retention or shorten the wait",
            )


def tool_count_warnings(root: dict[str, Any]) -> Iterator[RefProblem]:
    """Agents whose named tools alone are more than a model request may carry."""
    for name, raw in _mapping(root.get("agents")).items():
        agent = _mapping(raw)
        refs = [r for r in agent.get("tools") or [] if isinstance(r, str)]
        whole = [r for r in refs if r.startswith("mcp:") and "/" not in r]
        cache = {"builtin:session_cache_list", "builtin:session_cache_get"}
        own = any(not r.startswith("builtin:") for r in refs)
        session = _mapping(agent.get("session")).get("enabled", True) is not False
        count = len(set(refs) - set(whole) - cache - {"builtin:agent_clarify"}) + 1
        count += 2 if (own and session) or cache & set(refs) else 0
        count += len(agent.get("sub_agents") or [])
        if count > MAX_TOOLS:
            more = f", plus the tools of {', '.join(whole)}" if whole else ""
            yield RefProblem(
                ("agents", name, "tools"),
                f"this agent offers {count} tools{more}: more than the {MAX_TOOLS} a model "
                "request may carry (OpenAI's limit), so model APIs may refuse every request; "
                "select fewer (mcp:SERVER/TOOL picks single tools of a server)",
            )


def _check_storage_prefix(agent: str, prefix: Any) -> Iterator[RefProblem]:
    if not isinstance(prefix, str):
        return
    effective = prefix.replace("{agent}", agent)
    for reserved in RESERVED_PREFIXES:
        if effective.startswith(reserved) or reserved.startswith(effective):
            yield RefProblem(
                ("agents", agent, "storage_prefix"),
                f"storage_prefix {effective!r} overlaps the engine's own {reserved!r} prefix "
                f"(reserved: {', '.join(RESERVED_PREFIXES)}); choose another, e.g. "
                f"'storage/{agent}/'",
            )
            return


STORAGE_TOOLS = ("builtin:storage_read", "builtin:storage_write")
DEFAULT_STORAGE = "storage/"


def _check_storage_overlaps(agents: dict[str, Any]) -> Iterator[RefProblem]:
    """Storage agents whose prefixes nest (one lists the other's files), unless both share
    on purpose; and a prefix holding the whole default area `storage/`."""
    prefixes: dict[str, str] = {}
    shared: dict[str, bool] = {}
    for name, raw in agents.items():
        agent = _mapping(raw)
        tools = [t for t in agent.get("tools") or [] if isinstance(t, str)]
        prefix = agent.get("storage_prefix")
        if not any(t in STORAGE_TOOLS for t in tools) or not isinstance(prefix, (str, type(None))):
            continue
        prefixes[name] = (prefix or "storage/{agent}/").replace("{agent}", name)
        shared[name] = agent.get("storage_shared") is True
    for name, prefix in prefixes.items():
        if "storage_prefix" not in _mapping(agents[name]):
            continue  # a default prefix; an overlap is reported on the custom one
        where = ("agents", name, "storage_prefix")
        if DEFAULT_STORAGE.startswith(prefix) and not shared[name]:
            yield RefProblem(
                where,
                f"storage_prefix {prefix!r} holds {DEFAULT_STORAGE!r}, where every agent's "
                "default storage lies: this agent could read and overwrite theirs; choose "
                f"'storage/{name}/' or another prefix of its own, or set storage_shared: true",
            )
            continue
        for other, theirs in prefixes.items():
            if other == name or not (prefix.startswith(theirs) or theirs.startswith(prefix)):
                continue
            if not (shared[name] and shared[other]):
                yield RefProblem(
                    where,
                    f"storage_prefix {prefix!r} overlaps agent {other!r}'s {theirs!r}: each "
                    "could read and overwrite the other's files; choose a prefix of its own, "
                    "or set storage_shared: true on both agents to share on purpose",
                )
                break


def _seconds(value: Any) -> float | None:
    try:
        seconds = parse_duration(value)
    except ValueError:
        return None
    return seconds if isinstance(seconds, float) else None


def _human(seconds: float) -> str:
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def compaction_model_problems(root: dict[str, Any], models: dict[str, Any]) -> Iterator[RefProblem]:
    """`compaction.model` (in defaults or an agent) names a configured model."""
    chosen: list[tuple[Path_, Any]] = [
        (
            ("defaults", "compaction", "model"),
            _mapping(_mapping(root.get("defaults")).get("compaction")).get("model"),
        )
    ]
    for agent, raw in _mapping(root.get("agents")).items():
        model = _mapping(_mapping(raw).get("compaction")).get("model")
        chosen.append((("agents", agent, "compaction", "model"), model))
    for path, name in chosen:
        if isinstance(name, str) and name not in models:
            yield RefProblem(path, f"unknown model {name!r}{did_you_mean(name, models)}")


def context_problems(spec: AgentfnSpec) -> Iterator[RefProblem]:
    """Tool definitions too large for the agent's model window, when the spec declares them
    (an MCP server's or a python function's inferred schema is measured at run time), with
    the same rule the engine applies (runtime.engine.compaction.WIDE_TOOLS_SHARE)."""
    import json

    from runtime.engine.compaction import WIDE_TOOLS_SHARE
    from runtime.engine.context import MESSAGE_TOKENS, tokens
    from runtime.models.windows import context_window

    for name, agent in spec.agents.items():
        model = spec.model_for(name)
        window = context_window(spec.models[model])
        needed = 0
        for ref in agent.tools:
            tool = spec.tools.get(ref)
            if tool is not None:
                schema = json.dumps(tool.input_schema or {})
                needed += MESSAGE_TOKENS + tokens(ref + tool.description + schema)
        if needed >= window * WIDE_TOOLS_SHARE:
            yield RefProblem(
                ("agents", name, "tools"),
                f"the definitions of these tools take about {needed} tokens, "
                f"{needed * 100 // window}% of model {model!r}'s context window ({window} "
                "tokens), leaving too little for the conversation; offer fewer tools or use a "
                "model with a larger context_window",
            )


def budget_problems(spec: AgentfnSpec) -> Iterator[RefProblem]:
    """A dollar budget needs a price for every model it would count (the agent's team, their
    fallbacks and compaction models); unpriced calls would cost nothing and pass it."""
    from runtime.spec.graph import agent_closure, model_closure

    owners: list[tuple[Path_, str | None, Any]] = [
        (("defaults", "budget"), None, spec.defaults.budget)
    ]
    owners += [(("agents", n, "budget"), n, a.budget) for n, a in spec.agents.items()]
    for path, owner, budget in owners:
        if budget is None:
            continue
        dollars = budget.max_cost_usd is not None or (
            budget.session is not None and budget.session.max_cost_usd is not None
        )
        if not dollars:
            continue
        agents = {
            a for n in ([owner] if owner else list(spec.agents)) for a in agent_closure(spec, n)
        }
        models = set(model_closure(spec, sorted(agents)))
        models |= {m for a in agents if (m := spec.compaction_for(a).model)}
        unpriced = sorted(m for m in models if spec.models[m].price is None)
        if unpriced:
            yield RefProblem(
                path,
                f"a budget in dollars needs the price of every model it counts; "
                f"{', '.join(unpriced)} {'has' if len(unpriced) == 1 else 'have'} none in the "
                "genai-prices data set: set models.NAME.price (input_per_mtok, output_per_mtok)",
            )
