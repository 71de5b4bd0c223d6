"""A run seen as an A2A task (A2A 1.0, the official `a2a-sdk`'s protobuf types).

The mapping, one rule each way:

- task id = run id, context id = session id (a new message in the same context continues
  the session's conversation in a new run);
- run status → task state: `running` (and `awaiting_children` while no child waits for a
  person) → working; `succeeded` → completed, the answer as a text part of the `result`
  artifact and, when the agent answered an object, that object as a data part;
  `failed` → failed, the status message naming the error code and message;
  `cancelled` → canceled; `awaiting_approval` / `awaiting_input` (the run's own, or a child's
  it waits for) → input-required, the status message carrying the question or the pending
  calls (tool, arguments, allowed decisions) as text and as a data part;
- a message to an input-required task answers it: a data part `{approved, reason?,
  edited_inputs?, tool_call_id?}` decides the pending approval, text answers the question.

Only this module and runtime.protocols.a2a_rpc import the SDK (lazily, from the handlers).
"""

from __future__ import annotations

import json
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format, struct_pb2

from runtime.protocols.waiting import waiting_view

STATES = {
    "running": pb.TASK_STATE_WORKING,
    "awaiting_children": pb.TASK_STATE_WORKING,
    "awaiting_approval": pb.TASK_STATE_INPUT_REQUIRED,
    "awaiting_input": pb.TASK_STATE_INPUT_REQUIRED,
    "succeeded": pb.TASK_STATE_COMPLETED,
    "failed": pb.TASK_STATE_FAILED,
    "cancelled": pb.TASK_STATE_CANCELED,
}
TERMINAL_STATES = frozenset({pb.TASK_STATE_COMPLETED, pb.TASK_STATE_FAILED, pb.TASK_STATE_CANCELED})
DECISION_KEYS = frozenset({"approved", "reason", "edited_inputs", "tool_call_id"})


def _data(value: Any) -> pb.Part:
    part = pb.Part()
    json_format.ParseDict(value, part.data)  # a google.protobuf.Value: any JSON
    return part


def _text(text: str) -> pb.Part:
    return pb.Part(text=text)


def _agent_message(task: pb.Task, parts: list[pb.Part], message_id: str) -> pb.Message:
    return pb.Message(
        message_id=message_id,
        context_id=task.context_id,
        task_id=task.id,
        role=pb.ROLE_AGENT,
        parts=parts,
    )


def question_parts(waiting: dict[str, Any]) -> list[pb.Part]:
    """What a person must answer, as text and as data (the run that asks, and what)."""
    asker = f"{waiting.get('agent', '')} (run {waiting.get('run_id', '')})"
    clarification = waiting.get("clarification")
    if clarification:
        text = f"{asker} asks: {clarification['question']}"
        data = {"kind": "clarification", "run_id": waiting.get("run_id"), **clarification}
        return [_text(text + "\nAnswer with a text message to this task."), _data(data)]
    pending = waiting.get("pending_approval") or []
    lines = [
        f"- {p['tool_name']}({json.dumps(p.get('inputs'), sort_keys=True)}) "
        f"[tool_call_id {p['tool_call_id']}; decisions: {', '.join(p['decisions'])}]"
        for p in pending
    ]
    text = f"{asker} waits for approval of:\n" + "\n".join(lines)
    text += (
        '\nContinue this task with a data part {"approved": true|false, "reason"?, '
        '"edited_inputs"?, "tool_call_id"?}.'
    )
    data = {"kind": "approval", "run_id": waiting.get("run_id"), "pending_approval": pending}
    return [_text(text), _data(data)]


def task_of(result: dict[str, Any], history: list[pb.Message] | None = None) -> pb.Task:
    """The A2A task for a run's result (the API's result contract)."""
    status = str(result["status"])
    task = pb.Task(id=result["run_id"], context_id=result.get("session_id") or "")
    waiting = waiting_view(result) if status not in ("succeeded", "failed", "cancelled") else None
    state = pb.TASK_STATE_INPUT_REQUIRED if waiting is not None else STATES[status]
    task.status.state = state
    task.status.timestamp.GetCurrentTime()
    message_id = f"{task.id}-{status}"
    if waiting is not None:
        task.status.message.CopyFrom(_agent_message(task, question_parts(waiting), message_id))
    elif status == "succeeded":
        answer = result.get("result")
        text = answer if isinstance(answer, str) else json.dumps(answer, sort_keys=True)
        parts = [_text(text)]
        if not isinstance(answer, str):
            parts.append(_data(answer))
        task.artifacts.append(pb.Artifact(artifact_id=f"{task.id}-result", name="result"))
        task.artifacts[0].parts.extend(parts)
        task.status.message.CopyFrom(_agent_message(task, parts, message_id))
    elif status in ("failed", "cancelled"):
        code, why = result.get("error_code") or "", result.get("error_message") or ""
        parts = [_text(f"{code}: {why}"), _data({"error_code": code, "error_message": why})]
        task.status.message.CopyFrom(_agent_message(task, parts, message_id))
    usage = {
        k: result[k]
        for k in ("agent", "turns_used", "tokens_input", "tokens_output", "cost_usd")
        if k in result
    }
    task.metadata.update(usage)
    if history:
        task.history.extend(history)
    return task


def message_text(message: pb.Message) -> str:
    """The text parts of a message, joined."""
    return "\n".join(p.text for p in message.parts if p.WhichOneof("content") == "text")


def message_data(message: pb.Message) -> list[Any]:
    """The data parts of a message, as JSON values."""
    return [
        json_format.MessageToDict(p.data)
        for p in message.parts
        if p.WhichOneof("content") == "data"
    ]


def to_json(message: Any) -> dict[str, Any]:
    """A protobuf message as the SDK's JSON (camelCase), what its client parses."""
    found: dict[str, Any] = json_format.MessageToDict(message)
    return found


def value(data: Any) -> struct_pb2.Value:
    found = struct_pb2.Value()
    json_format.ParseDict(data, found)
    return found


def list_tasks(service: Any, agent: str, request: pb.ListTasksRequest) -> pb.ListTasksResponse:
    """ListTasks over one context: the session's runs of `agent`, newest first, filtered by
    state, a page at a time (page size 1 to 100, 50 by default; the page token names the last
    task of the page before, as the SDK's own store does).

    A context id is required: runs are kept per session, and listing every task of an agent
    would scan the table. `statusTimestampAfter` is refused: a run keeps no time of its last
    change for the task to carry. Artifacts only with `includeArtifacts`, as the SDK's
    server answers; no task carries history, so `historyLength` has nothing to cut."""
    from a2a.utils import errors as a2a_errors
    from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
    from a2a.utils.task import decode_page_token, encode_page_token, validate_page_size

    if not request.context_id:
        raise a2a_errors.InvalidParamsError(
            "contextId: required here (tasks are listed per context: a session's runs)"
        )
    if request.HasField("status_timestamp_after"):
        raise a2a_errors.InvalidParamsError(
            "statusTimestampAfter: not supported (a run keeps no time of its last change)"
        )
    if request.HasField("history_length") and request.history_length < 0:
        raise a2a_errors.InvalidParamsError("historyLength: must be non-negative")
    if request.HasField("page_size"):
        validate_page_size(request.page_size)
    size = request.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
    ids = list(reversed(service.engine.store.session_runs(agent, request.context_id)))
    known: dict[str, pb.Task] = {}
    if request.status:  # a state filter reads every run; else only the page's are read
        known = {run: task_of(service.get(run)) for run in ids}
        ids = [run for run in ids if known[run].status.state == request.status]
    start = 0
    if request.page_token:
        after = decode_page_token(request.page_token)
        if after not in ids:
            raise a2a_errors.InvalidParamsError("pageToken: not a token of this listing")
        start = ids.index(after) + 1
    page = [known.get(run) or task_of(service.get(run)) for run in ids[start : start + size]]
    if not request.include_artifacts:
        for task in page:
            task.ClearField("artifacts")
    more = start + size < len(ids)
    return pb.ListTasksResponse(
        tasks=page,
        next_page_token=encode_page_token(page[-1].id) if more and page else "",
        page_size=size,
        total_size=len(ids),
    )
