"""Specs of the workflow tests: scripted agents whose answers make every path of a workflow
happen (structured results, an approval wait, a failure, a list to map over)."""

from __future__ import annotations

from typing import Any

from runtime.spec import AgentfnSpec
from tests.runtime.engine.kit import TOOLS


def _scripted(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"provider": "scripted", "script": list(entries)}


def _agent(model: str, **extra: Any) -> dict[str, Any]:
    return {"description": f"The {model}.", "model": model, **extra}


def _schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


AGENTS: dict[str, Any] = {
    "classifier": _agent("classifier", output_schema=_schema(category={"type": "string"})),
    "logs": _agent("logs"),
    "billing": _agent("billing", tools=["charge"], approval=[{"tools": ["charge"]}]),
    "writer": _agent("writer"),
    "approver": _agent("approver", output_schema=_schema(approved={"type": "boolean"})),
    "refuser": _agent("refuser", output_schema=_schema(approved={"type": "boolean"})),
    "planner": _agent(
        "planner", output_schema=_schema(tasks={"type": "array", "items": {"type": "string"}})
    ),
    "worker": _agent("worker", tools=["aslow"]),
    "broken": _agent("broken"),
}
MODELS: dict[str, Any] = {
    "classifier": _scripted({"text": {"category": "billing"}}),
    "logs": _scripted({"text": "logs: nothing odd"}),
    "billing": _scripted(
        {"tool_calls": [{"name": "charge", "arguments": {"amount": -5}}]},
        {"text": "billing: refund of 5 issued"},
    ),
    "writer": _scripted({"text": "Dear customer, it is fixed."}),
    "approver": _scripted({"text": {"approved": True}}),
    "refuser": _scripted({"text": {"approved": False}}),
    "planner": _scripted({"text": {"tasks": ["alpha", "beta", "gamma"]}}),
    "worker": _scripted(
        {"tool_calls": [{"name": "aslow", "arguments": {"seconds": 0.5, "label": "w"}}]},
        {"text": "done"},
    ),
    "broken": _scripted({"error": {"status": 400, "code": "ValidationException"}}),
    # `llm` steps: one call each (a scripted model answers every first call with entry 0)
    "tagger": _scripted({"text": '```json\n{"tags": ["refund", "urgent"]}\n```'}),
    "summariser": _scripted({"text": "Refund twice charged customer; urgent."}),
    "rambler": _scripted({"text": "tags: refund"}),
}
TICKET = _schema(ticket={"type": "string"})
WORKFLOWS: dict[str, Any] = {
    "triage": {
        "description": "Classify, investigate in parallel, draft, review.",
        "input_schema": TICKET,
        "steps": [
            {"id": "classify", "agent": "classifier", "input": "{ticket}"},
            {
                "id": "investigate",
                "parallel": [
                    {"agent": "logs", "input": "{ticket}"},
                    {
                        "agent": "billing",
                        "input": "{ticket}",
                        "when": "{classify.category} == 'billing'",
                    },
                    {"agent": "logs", "input": "{ticket}", "when": "{classify.category} == 'x'"},
                ],
            },
            {
                "id": "draft",
                "agent": "writer",
                "input": "Ticket: {ticket}\nFindings: {investigate}",
            },
            {"id": "review", "loop": {"agent": "approver", "until": "{review.approved}"}},
        ],
    },
    "fanout": {
        "steps": [
            {"id": "plan", "agent": "planner"},
            {
                "id": "work",
                "map": {
                    "over": "{plan.tasks}",
                    "agent": "worker",
                    "input": "do {item}",
                    "max_concurrency": 2,
                },
            },
        ]
    },
    "stubborn": {
        "steps": [
            {
                "id": "review",
                "loop": {"agent": "refuser", "until": "{review.approved}", "max_iterations": 3},
            }
        ]
    },
    "oneshot": {
        "description": "Plain model calls as steps, no agent loop, results used downstream.",
        "input_schema": TICKET,
        "steps": [
            {
                "id": "tags",
                "llm": {
                    "model": "tagger",
                    "prompt": "Tag this ticket: {ticket}",
                    "output_schema": _schema(tags={"type": "array", "items": {"type": "string"}}),
                },
            },
            {
                "id": "summary",
                "llm": {
                    "model": "summariser",
                    "system": "One line.",
                    "prompt": "Ticket: {ticket}. Tags: {tags.tags}",
                },
                "when": "{tags.tags.0} == 'refund'",
            },
            {"id": "draft", "agent": "writer", "input": "{summary}"},
        ],
    },
    "unparsable": {
        "steps": [
            {
                "id": "tags",
                "llm": {"model": "rambler", "prompt": "{input}", "output_schema": _schema(tags={})},
                "retries": 1,
            }
        ]
    },
    "fragile": {
        "steps": [
            {"id": "optional", "agent": "broken", "on_error": "continue", "retries": 1},
            {"id": "required", "agent": "broken"},
            {"id": "never", "agent": "worker"},
        ]
    },
}


def workflow_spec() -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "engine_tools",
            "models": MODELS,
            "tools": {"charge": TOOLS["charge"], "aslow": TOOLS["aslow"]},
            "agents": AGENTS,
            "workflows": WORKFLOWS,
        }
    )
