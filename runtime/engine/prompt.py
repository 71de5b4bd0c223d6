"""System prompt variables (`{date}`, `{agent}`, …), rendered at each model call."""

from __future__ import annotations

from datetime import UTC, datetime

from runtime.spec.agents import AgentConfig

FINAL_TURN_NOTE = (
    "\n\nThis is your final turn: tools are no longer available. Answer now with what you know."
)


def render_system_prompt(
    agent: str, config: AgentConfig, run_id: str, session_id: str, now: float
) -> str:
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
    return config.system_prompt.format(**values)
