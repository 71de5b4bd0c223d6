"""One chain of hooks: the hooks an agent has for an event, applied in order, each seeing
what the ones before it left, the first denial ending it.

A chain is durable when it must be (`pre_tool_use`, `on_run_start`): its progress is
committed on the run head after every hook that was *asked* (http, python, lambda), so a
crash resumes after the last answer instead of asking again; rule hooks are pure and are
simply evaluated again. Other chains are part of the commit of what they decide about.
"""

from __future__ import annotations

import fnmatch
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runtime.engine.commits import RunCursor
from runtime.engine.hook_kinds import ALLOW, Asking, HookFailure, Verdict, ask, parse_answer
from runtime.engine.hook_rules import RuleSet
from runtime.engine.toolsets import Toolsets
from runtime.events import EventType
from runtime.spec.graph import agent_hooks
from runtime.spec.plain import HookConfig, RuleHook
from runtime.store.base import HookProgress

log = logging.getLogger("agentfn.hooks")

Events = list[tuple[EventType, dict[str, Any]]]

MAX_HOOK_WARNINGS = 20


@dataclass(frozen=True)
class Bound:
    """A hook as one agent sees it: where it is declared (its id in events) and its rules
    compiled when it is a rule hook."""

    id: str
    config: HookConfig
    rules: RuleSet | None


class HookPlan:
    """One agent's hooks by event, tool matches cached per tool identity."""

    def __init__(self, hooks: list[tuple[str, HookConfig]]):
        self.events: dict[str, list[Bound]] = {}
        for hook_id, config in hooks:
            rules = RuleSet(config) if isinstance(config, RuleHook) else None
            self.events.setdefault(config.event, []).append(Bound(hook_id, config, rules))
        self.tools = "pre_tool_use" in self.events or "post_tool_use" in self.events
        self._matched: dict[tuple[str, str], list[Bound]] = {}

    def on(self, event: str) -> list[Bound]:
        return self.events.get(event) or []

    def for_tool(self, event: str, reference: str) -> list[Bound]:
        key = (event, reference)
        found = self._matched.get(key)
        if found is None:
            found = self._matched[key] = [
                b
                for b in self.on(event)
                if b.config.match is None
                or any(fnmatch.fnmatchcase(reference, p) for p in b.config.match)
            ]
        return found


@dataclass
class Outcome:
    denied: str | None
    value: Any
    modified: bool = False
    events: Events = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class HookChain(Toolsets):
    """Asking and applying hooks (split out of HookPhase to keep modules small)."""

    def _hook_plan(self, agent: str) -> HookPlan:
        plans: dict[str, HookPlan] | None = self.__dict__.get("_hook_plans")
        if plans is None:
            plans = self.__dict__["_hook_plans"] = {}
        plan = plans.get(agent)
        if plan is None:
            plan = plans[agent] = HookPlan(agent_hooks(self.spec, agent))
        return plan

    async def _chain(
        self,
        run: RunCursor,
        event: str,
        hooks: list[Bound],
        subject: Any,
        payload: Callable[[Any], dict[str, Any]],
        *,
        key: str,
        check: Callable[[Any], str | None] | None = None,
        about: dict[str, Any] | None = None,
        durable: bool = False,
        settle: bool = False,
    ) -> Outcome:
        """Apply `hooks` in order to `subject`: each sees what the ones before it left; the
        first denial stops the chain. `durable`: resume from the progress committed on the
        head under `key`, and commit it again after every hook that was asked."""
        outcome = Outcome(denied=None, value=subject)
        start = saved = 0
        if durable and (progress := run.head.hook_decisions.get(key)) is not None:
            start = saved = progress.done
            outcome.denied = progress.denied
            if progress.arguments is not None:
                outcome.value, outcome.modified = progress.arguments, True
        index = start
        while outcome.denied is None and index < len(hooks):
            hook = hooks[index]
            index += 1
            began = time.perf_counter()
            verdict, error = await self._decide(run, event, hook, outcome, payload, key, check)
            data: dict[str, Any] = {
                "hook": hook.id,
                "type": hook.config.type,
                "event": event,
                **(about or {}),
                "decision": verdict.decision,
                "reason": verdict.reason,
                "duration_ms": int((time.perf_counter() - began) * 1000),
            }
            if error is not None:
                data["error"] = self._failed(hook, event, error, outcome.warnings)
            outcome.events.append(("hook_decision", data))
            if verdict.decision == "deny":
                outcome.denied = verdict.reason or f"denied by hook {hook.id}"
            elif verdict.decision == "modify":
                outcome.value, outcome.modified = verdict.value, True
            if durable and hook.rules is None:
                saved = self._save(run, key, index, outcome)
        if durable and settle and (outcome.events or saved != index):
            self._save(run, key, index, outcome)
        return outcome

    async def _decide(
        self,
        run: RunCursor,
        event: str,
        hook: Bound,
        outcome: Outcome,
        payload: Callable[[Any], dict[str, Any]],
        key: str,
        check: Callable[[Any], str | None] | None,
    ) -> tuple[Verdict, str | None]:
        """One hook's verdict, and the error when it failed (then on_error decided)."""
        try:
            if hook.rules is not None:  # RuleUnusable is a HookFailure
                reason = hook.rules.denial(outcome.value)
                return (ALLOW if reason is None else Verdict("deny", reason)), None
            sent = self._payload(run, event, hook, payload(outcome.value))
            answer = await ask(hook.config, sent, self._asking(run, f"{event}:{key}:{hook.id}"))
            verdict = parse_answer(event, answer)
            if verdict.decision == "modify" and check is not None:
                problem = check(verdict.value)
                if problem is not None:
                    raise HookFailure(problem)
        except HookFailure as exc:
            if getattr(hook.config, "on_error", "allow") != "deny":
                return ALLOW, str(exc)
            return Verdict("deny", f"the {hook.config.type} hook failed: {exc}"), str(exc)
        return verdict, None

    def _save(self, run: RunCursor, key: str, done: int, outcome: Outcome) -> int:
        """Commit a chain's progress (and the events and warnings it has so far)."""
        progress = HookProgress(
            done=done,
            denied=outcome.denied,
            arguments=outcome.value if outcome.modified else None,
        )
        update: dict[str, Any] = {"hook_decisions": {**run.head.hook_decisions, key: progress}}
        if outcome.warnings:
            update["warnings"] = self._warned(run, outcome.warnings)
        run.head = self._commit(run.head, [], outcome.events, update=update)
        outcome.events, outcome.warnings = [], []
        return done

    def _payload(
        self, run: RunCursor, event: str, hook: Bound, extra: dict[str, Any]
    ) -> dict[str, Any]:
        head = run.head
        base = {"event": event, "hook": hook.id, "agent": run.agent, "run_id": head.run_id}
        return {**base, "session_id": head.session_id, **extra}

    def _asking(self, run: RunCursor, key: str) -> Asking:
        head = run.head
        return Asking(
            secrets=lambda text: self.secrets()(text),
            lambda_client=self._lambda_for_tools,
            package=self.spec.tools_package,
            run_id=head.run_id,
            session_id=head.session_id,
            agent=head.agent,
            key=key,
        )

    def _failed(self, hook: Bound, event: str, error: str, warnings: list[str]) -> str:
        """Make a hook failure visible: a warning for the run and a log line (redacted)."""
        from runtime.secrets import redact

        error = str(redact(error))
        warning = f"hook {hook.id} ({hook.config.type}, {event}) failed: {error}"
        if event != "on_run_complete":  # fire and forget: nothing was decided
            denies = getattr(hook.config, "on_error", "allow") == "deny"
            warning += "; denied (on_error: deny)" if denies else "; allowed (fail open)"
        warnings.append(warning)
        log.warning(warning)
        return error

    def _warned(self, run: RunCursor, new: list[str]) -> list[str]:
        """The run's warnings with these added once each (bounded: the head stays small)."""
        warnings = list(run.head.warnings)
        for text in new:
            if text not in warnings and len(warnings) < MAX_HOOK_WARNINGS:
                warnings.append(text)
        return warnings


def schema_problem(schema: dict[str, Any] | None, value: Any) -> str | None:
    """Why a hook's replacement does not fit the schema it must (None: it does)."""
    if schema is None:
        return None
    from runtime.safety.schema_check import SchemaViolation, check

    try:
        check(schema, value)
    except SchemaViolation as exc:
        return f"the replacement does not fit the schema: {exc}"
    return None
