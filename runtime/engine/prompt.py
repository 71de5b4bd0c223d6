"""System prompt variables (`{date}`, `{agent}`, …), rendered at each model call."""

from __future__ import annotations

from datetime import UTC, datetime

from runtime.spec.agents import AgentConfig
from runtime.store.base import RunHead

FINAL_TURN_NOTE = (
    "\n\nThis is your final turn: tools are no longer available. Answer now with what you know."
)


_CACHE: dict[tuple[str, str, str, int], str] = {}


def render_system_prompt(
    agent: str, config: AgentConfig, run_id: str, session_id: str, now: float
) -> str:
    """The prompt with its variables filled in. The finest variable is a second, so one
    rendering serves every model call of a run within the same second."""
    assert isinstance(config.system_prompt, str)  # a {python: …} prompt: computed_prompt
    key = (config.system_prompt, run_id, session_id, int(now))
    text = _CACHE.get(key)
    if text is None:
        if len(_CACHE) > 256:
            _CACHE.clear()
        text = _CACHE[key] = _render(agent, config, run_id, session_id, now)
    return text


def _render(agent: str, config: AgentConfig, run_id: str, session_id: str, now: float) -> str:
    moment = datetime.fromtimestamp(now, UTC)
    values = {
        "date": moment.date().isoformat(),
        "time": moment.strftime("%H:%M UTC"),
        "datetime": moment.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "weekday": moment.strftime("%A"),
        "agent": agent,
        "description": config.description,
        "run_id": run_id,
        "session_id": session_id,
    }
    return str(config.system_prompt).format(**values)


def team_prompt(head: RunHead, template: str, rendered: str, now: float) -> str:
    """The prompt of an agent working in a team: a sub-agent's starts with a block naming
    its supervisor (stay in role, `request_help` when unsure) and today's date if its own
    prompt has no date; a supervisor that got the conversation back reads why."""
    supervisor = head.supervisor
    if supervisor is not None:
        today = datetime.fromtimestamp(now, UTC).date().isoformat()
        dated = "{date}" in template or "{datetime}" in template
        block = (
            f"You are {head.active_agent}, a specialist working for {supervisor}, who handed "
            "you this conversation. Keep to your role. If the request is outside it, or you "
            "are not sure how to go on, call request_help with the reason rather than guess."
            + ("" if dated else f" Today is {today}.")
        )
        rendered = f"{block}\n\n{rendered}"
    help_request = head.help_request
    if help_request is not None and help_request.agent != head.active_agent:
        rendered += (
            f"\n\n{help_request.agent} handed the conversation back to you and asked for "
            f"help: {help_request.reason}"
        )
    return rendered
