"""A system prompt computed from the run: `system_prompt: {python: MODULE:FUNCTION}`.

The function (of the project's tools package, like a Python tool's handler: the path is
checked again here, YAML never imports anything else) is called before a model call with
the run's context and its history, and returns the prompt's text:

    def support(context: dict, history: list[dict]) -> str: ...

`context` holds agent, description, run_id, session_id, turn and the time (ISO, UTC);
`history` the session's earlier messages and this run's, as JSON (`kind`: user,
assistant, tool_result or summary, with their fields: content, text, tool_calls…). A
sync function runs in a worker thread; either kind is bounded by `timeout`.

The text is recorded before the model sees it, as an object of the run
(`bodies/{run_id}/system-prompt/{agent}-{turn}.txt`), and a recorded turn is never computed again:
a retried call, a resume on another container after a crash, a fallback model all get the
same prompt, whatever the function would say now. A failing, slow or non-text function
fails the run with SYSTEM_PROMPT_FAILED naming it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from runtime.engine.prompt import render_system_prompt, team_prompt
from runtime.errors import RunError
from runtime.spec.agents import AgentConfig, PythonPrompt
from runtime.structs import dump
from runtime.tools.base import ToolError

if TYPE_CHECKING:
    from runtime.engine.commits import RunCursor
    from runtime.store.base import BlobStore

log = logging.getLogger("agentfn.prompt")
MAX_PROMPT_CHARS = 200_000


class SystemPromptFailed(RunError):
    error_code = "SYSTEM_PROMPT_FAILED"


def prompt_key(run_id: str, agent: str, turn: int) -> str:
    """Per agent (a team's agents share the run) and turn; under the run's own prefix."""
    return f"bodies/{run_id}/system-prompt/{agent}-{turn}.txt"


def recorded_prompt(blobs: BlobStore, run_id: str, agent: str, turn: int) -> str | None:
    try:
        return blobs.get(prompt_key(run_id, agent, turn)).decode("utf-8")
    except KeyError:
        return None


async def agent_prompt(run: RunCursor, spec: Any, blobs: BlobStore, turn: int, now: float) -> str:
    """The system prompt of this model call: the text's variables filled in (today's date
    added when it lacks one and `inject_date` is on; a sub-agent's date is in its team
    block), or the function's answer for this turn; then the team's additions
    (runtime.engine.prompt)."""
    head = run.head
    config: AgentConfig = spec.agents[run.agent]
    dated = spec.defaults.inject_date if config.inject_date is None else config.inject_date
    if isinstance(config.system_prompt, PythonPrompt):
        system = template = await computed_prompt(
            config.system_prompt,
            run,
            package=spec.tools_package,
            blobs=blobs,
            description=config.description,
            turn=turn,
            now=now,
        )
    else:
        template = config.system_prompt
        system = render_system_prompt(
            run.agent,
            config,
            head.run_id,
            head.session_id,
            now,
            inject_date=dated and head.supervisor is None,
        )
    return team_prompt(head, template, system, now, inject_date=dated)


async def computed_prompt(
    prompt: PythonPrompt,
    run: RunCursor,
    *,
    package: str,
    blobs: BlobStore,
    description: str,
    turn: int,
    now: float,
) -> str:
    """The turn's recorded prompt, or the function's answer, recorded now."""
    head = run.head
    recorded = recorded_prompt(blobs, head.run_id, run.agent, turn)
    if recorded is not None:
        return recorded
    where = f"system_prompt {prompt.python}"
    from runtime.tools.python_tool import resolve_handler  # only agents with such a prompt

    try:
        func = resolve_handler(prompt.python, package)
    except ToolError as exc:
        raise SystemPromptFailed(f"{where}: {exc}") from None
    context = {
        "agent": run.agent,
        "description": description,
        "run_id": head.run_id,
        "session_id": head.session_id,
        "turn": turn,
        "now": datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds"),
    }
    history = [dump(m) for m in (*run.history, *run.messages)]
    started = time.monotonic()
    try:
        text = await asyncio.wait_for(_call(func, context, history), prompt.timeout)
    except TimeoutError:
        raise SystemPromptFailed(f"{where} did not return within {prompt.timeout:g}s") from None
    except Exception as exc:
        raise SystemPromptFailed(f"{where} raised {type(exc).__name__}: {exc}") from None
    elapsed = time.monotonic() - started
    if not isinstance(text, str) or not text.strip():
        raise SystemPromptFailed(f"{where} returned {type(text).__name__}, not non-empty text")
    if len(text) > MAX_PROMPT_CHARS:
        raise SystemPromptFailed(f"{where} returned {len(text):,} characters, over 200,000")
    blobs.put(
        prompt_key(head.run_id, run.agent, turn), text.encode("utf-8"), "text/plain; charset=utf-8"
    )
    log.info(
        "%s computed in %.0f ms for turn %d (%d chars)", where, elapsed * 1000, turn, len(text)
    )
    return text


async def _call(func: Any, context: dict[str, Any], history: list[dict[str, Any]]) -> Any:
    if inspect.iscoroutinefunction(func):
        return await func(context, history)
    return await asyncio.to_thread(func, context, history)
