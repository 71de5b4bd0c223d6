"""System prompt variables (`{date}`, `{agent}`, …), rendered at each model call."""

from __future__ import annotations

from datetime import UTC, datetime

from runtime.spec.plain import AgentConfig
from runtime.store.base import RunHead

FINAL_TURN_NOTE = (
    "\n\nThis is your final turn: tools are no longer available. Answer now with what you know."
)


_CACHE: dict[tuple[str, str, str, int, bool], str] = {}


def render_system_prompt(
    agent: str,
    config: AgentConfig,
    run_id: str,
    session_id: str,
    now: float,
    *,
    inject_date: bool = False,
) -> str:
    """The prompt with its variables filled in. The finest variable is a second, so one
    rendering serves every model call of a run within the same second. With `inject_date`,
    a prompt without a date variable ends with today's date: a model does not know the day,
    and "next Friday" or "is this order late?" depend on it (seed 003)."""
    assert isinstance(config.system_prompt, str)  # a {python: …} prompt: computed_prompt
    key = (config.system_prompt, run_id, session_id, int(now), inject_date)
    text = _CACHE.get(key)
    if text is None:
        if len(_CACHE) > 256:
            _CACHE.clear()
        text = _render(agent, config, run_id, session_id, now)
        if inject_date and not has_date(config.system_prompt):
            text += "\n\n" + date_line(now)
        _CACHE[key] = text
    return text


def has_date(template: str) -> bool:
    """Does the prompt template show the date itself?"""
    return "{date}" in template or "{datetime}" in template


def date_line(now: float) -> str:
    moment = datetime.fromtimestamp(now, UTC)
    return f"Today is {moment.strftime('%A')}, {moment.date().isoformat()} (UTC)."


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


def team_prompt(
    head: RunHead, template: str, rendered: str, now: float, *, inject_date: bool = True
) -> str:
    """The prompt of an agent working in a team: a sub-agent's starts with a block naming
    its supervisor (stay in role, `request_help` when unsure) and today's date if its own
    prompt has no date; a supervisor that got the conversation back reads why."""
    supervisor = head.supervisor
    if supervisor is not None:
        today = datetime.fromtimestamp(now, UTC).date().isoformat()
        dated = has_date(template) or not inject_date
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
