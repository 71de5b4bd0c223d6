"""A rubric graded by a model: the case's input, the run's answer and tool trajectory go to
the judge, which answers a JSON object `{"grade": 0..1, "reasoning": "…"}`. The judge is
a model of the spec or of the eval file's own `models` (built like the agents' models, so
its traffic is recorded and replayed with the case's cassette)."""

from __future__ import annotations

import json
import re
from typing import Any

from infra.evals.assertions import Check, Outcome
from infra.evals.format import Case

SYSTEM = (
    "You grade the answer of an AI agent against a rubric. Read the conversation, the "
    "tools the agent called and its final answer, then answer with only a JSON object: "
    '{"grade": <a number from 0 (fails the rubric) to 1 (fully meets it)>, '
    '"reasoning": "<one or two sentences>"}.'
)


def prompt(case: Case, outcome: Outcome, rubric: str) -> str:
    calls = "\n".join(
        f"- {c.agent} called {c.tool}({json.dumps(c.args, ensure_ascii=False)}) → "
        f"{'ok' if c.success else 'failed'}"
        for c in outcome.trajectory
    )
    said = "\n".join(f"User: {text}" for text in case.messages)
    return (
        f"Rubric:\n{rubric}\n\nConversation:\n{said}\n\nTool calls:\n{calls or '(none)'}\n\n"
        f"Run status: {outcome.status}\n\nFinal answer:\n{outcome.answer_text or '(none)'}"
    )


def parse_grade(text: str) -> tuple[float, str]:
    """The grade and reasoning out of the judge's answer (the first JSON object in it)."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if match is None:
        raise ValueError(f"the judge did not answer a JSON object: {text[:200]!r}")
    data = json.loads(match.group(0))
    grade = data.get("grade") if isinstance(data, dict) else None
    if isinstance(grade, bool) or not isinstance(grade, int | float) or not 0 <= grade <= 1:
        raise ValueError(f"the judge's grade is not a number from 0 to 1: {grade!r}")
    return float(grade), str(data.get("reasoning") or "")


def judge(
    case: Case, outcome: Outcome, models: Any, default_model: str | None
) -> tuple[Check, dict[str, Any]]:
    """The `expect.judge` check, and what the report shows (model, grade, reasoning)."""
    from runtime.messages import UserMessage
    from runtime.models.base import ModelRequest
    from runtime.tools.threads import run_loop

    spec = case.expect.judge
    assert spec is not None
    name = spec.model or default_model
    assert name is not None  # infra.evals.format.reference_problems
    shown: dict[str, Any] = {"model": name, "threshold": spec.threshold, "rubric": spec.rubric}
    request = ModelRequest(
        system=SYSTEM, messages=[UserMessage(content=prompt(case, outcome, spec.rubric))]
    )
    try:
        answer = run_loop(models(name).request(request))
        grade, reasoning = parse_grade(answer.text or "")
    except Exception as exc:  # a judge that fails grades nothing: the check fails, saying why
        shown["error"] = str(exc)[:300]
        return Check("expect.judge", False, f"judge {name}: {str(exc)[:300]}"), shown
    shown.update(grade=grade, reasoning=reasoning)
    ok = grade >= spec.threshold
    why = "" if ok else f"grade {grade:g} < threshold {spec.threshold:g}: {reasoning}"
    return Check("expect.judge", ok, why), shown  # grade and reasoning: shown in full
