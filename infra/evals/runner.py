"""Run eval cases on the embedded stack: the engine, tools and hooks of `agentfn run`.

Each (case, repetition) is one job with its own Engine, session and cassette slice, so
agent cases run in parallel threads over one embedded AWS (moto's calls are serialized by
infra.local.aws.Serialized). Workflow cases run one at a time: their state machines register
the stack's functions process-wide. A run that waits for a person is answered from the
case's `approvals` and `replies`, in order; when they run out, the run stays waiting and
the assertions see that status.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from infra.evals.assertions import Check, Outcome, check_all
from infra.evals.cassettes import Cassette, ShiftedClock
from infra.evals.format import Case, LoadedEvals
from infra.evals.outcome import Collector
from runtime.spec import AgentfnSpec

MAX_WORKERS = 4
_NO_CASSETTE = {"scripted"}  # providers answered by the spec itself


@dataclass
class Attempt:
    """One repetition of a case."""

    checks: list[Check]
    outcome: Outcome
    seconds: float
    judge: dict[str, Any] | None = None  # grade, reasoning, threshold, model
    error: str | None = None  # the case could not run (not an assertion)

    @property
    def passed(self) -> bool:
        return self.error is None and all(c.ok for c in self.checks)


@dataclass
class CaseResult:
    file: str
    case: Case
    attempts: list[Attempt] = field(default_factory=list)
    cassette: str | None = None  # "replayed", "recorded", or None (scripted models only)
    cassette_path: str | None = None

    @property
    def passes(self) -> int:
        return sum(1 for a in self.attempts if a.passed)

    @property
    def passed(self) -> bool:
        return bool(self.attempts) and self.passes / len(self.attempts) >= self.case.pass_ratio

    @property
    def failing(self) -> list[Check]:
        """The failed checks of every failed attempt, each name once (first reason kept)."""
        seen: dict[str, Check] = {}
        for attempt in self.attempts:
            for check in attempt.checks:
                if not check.ok:
                    seen.setdefault(check.name, check)
        return list(seen.values())

    @property
    def tokens(self) -> int:
        return sum(a.outcome.tokens for a in self.attempts)

    @property
    def cost_usd(self) -> float:
        return sum(a.outcome.cost_usd for a in self.attempts)

    @property
    def seconds(self) -> float:
        return sum(a.seconds for a in self.attempts)


def needs_cassette(spec: AgentfnSpec, loaded: LoadedEvals, case: Case) -> bool:
    """Whether a model this case may call is a real one (its traffic recorded/replayed)."""
    evals = loaded.evals
    assert evals is not None
    models = {**spec.models, **evals.models}
    return any(models[name].provider not in _NO_CASSETTE for name in _models_of(spec, evals, case))


def _models_of(spec: AgentfnSpec, evals: Any, case: Case) -> set[str]:
    """The models the case's runs may call: its agent's team (or its workflow's agents and
    `llm` steps), their fallbacks, and its judge."""
    from runtime.spec.graph import agent_closure, model_closure

    if case.workflow is not None:
        workflow = spec.workflows[case.workflow]
        starts, extra = workflow.agents(), workflow.models()
    else:
        starts, extra = [case.target], []
    agents = [a for start in starts for a in agent_closure(spec, start)]
    names = set(model_closure(spec, agents))
    for name in extra:
        names |= {name, *spec.models[name].fallbacks}
    if case.expect.judge is not None:
        names.add(case.expect.judge.model or evals.judge)
    return names


def run_file(
    spec: AgentfnSpec,
    loaded: LoadedEvals,
    cases: list[Case],
    clients: Any,
    record: bool,
) -> list[CaseResult]:
    """Every selected case of one eval file; agent cases in parallel, then workflow cases."""
    results = {case.name: CaseResult(str(loaded.path), case) for case in cases}
    cassettes = {}
    for case in cases:
        if needs_cassette(spec, loaded, case):
            path = loaded.cassette_dir() / f"{case.name}.json"
            cassettes[case.name] = Cassette.open(path, record)
            results[case.name].cassette = "recorded" if record else "replayed"
            results[case.name].cassette_path = str(path)
    jobs = [(c, i) for c in cases if c.agent is not None for i in range(c.repeat)]
    with ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="eval") as pool:
        done = pool.map(
            lambda job: _attempt(spec, loaded, job[0], job[1], clients, cassettes.get(job[0].name)),
            jobs,
        )
        attempts = list(done)
    for (case, _), attempt in zip(jobs, attempts, strict=True):
        results[case.name].attempts.append(attempt)
    for case in cases:
        if case.workflow is not None:
            for index in range(case.repeat):
                attempt = _attempt(spec, loaded, case, index, clients, cassettes.get(case.name))
                results[case.name].attempts.append(attempt)
    for case in cases:
        cassette = cassettes.get(case.name)
        if cassette is not None and record:
            cassette.save()
    return [results[case.name] for case in cases]


def _attempt(
    spec: AgentfnSpec,
    loaded: LoadedEvals,
    case: Case,
    repetition: int,
    clients: Any,
    cassette: Cassette | None,
) -> Attempt:
    started = time.monotonic()
    try:
        models = _model_factory(spec, loaded, cassette, repetition)
        clock = ShiftedClock(cassette.recorded_at) if cassette and cassette.exists else None
        collector = Collector()
        if case.agent is not None:
            from infra.evals.drive import drive_agent

            outcome = drive_agent(spec, case, clients, models, collector, clock)
        else:
            from infra.evals.drive import drive_workflow

            outcome = drive_workflow(spec, case, clients, models, collector, clock)
    except Exception as exc:  # the case could not run at all: reported, never a traceback
        seconds = time.monotonic() - started
        return Attempt([], Outcome("error"), seconds, error=f"{type(exc).__name__}: {exc}")
    checks = check_all(case.expect, outcome)
    judged = None
    if case.expect.judge is not None:
        from infra.evals.judge import judge

        check, judged = judge(case, outcome, models, loaded.evals.judge if loaded.evals else None)
        checks.append(check)
    if cassette is not None and cassette.mismatches.get(repetition):
        first = cassette.mismatches[repetition][0]
        checks.insert(0, Check("cassette", False, first))
    return Attempt(checks, outcome, time.monotonic() - started, judged)


def _model_factory(
    spec: AgentfnSpec, loaded: LoadedEvals, cassette: Cassette | None, repetition: int
) -> Callable[[str], Any]:
    """(model name) → Model, as the engine builds them, with an HTTP provider's client
    recording or replaying this case's cassette. Replayed keys are placeholders: the
    request is answered from the cassette and no secret needs to exist."""
    from runtime.models.factory import build_model
    from runtime.secrets import SecretResolver

    evals = loaded.evals
    assert evals is not None
    configs = {**spec.models, **evals.models}
    replaying = cassette is not None and not cassette.recording

    def resolve_placeholder(text: str) -> str:
        import re

        return re.sub(r"\$\{secret:([^}]*)\}", r"replayed-\1", text)

    def make(name: str) -> Any:
        config = configs[name]
        if config.provider in _NO_CASSETTE or cassette is None:
            return build_model(name, config.to_runtime(), SecretResolver(spec.to_runtime()))
        if config.provider == "bedrock":
            from infra.evals.bedrock_cassette import bedrock_client

            client = bedrock_client(cassette, name, repetition, config)
            secrets = resolve_placeholder if replaying else SecretResolver(spec.to_runtime())
            return build_model(name, config.to_runtime(), secrets, boto_client=client)
        secrets = resolve_placeholder if replaying else SecretResolver(spec.to_runtime())
        return build_model(
            name, config.to_runtime(), secrets, http_client=cassette.client(name, repetition)
        )

    return make
