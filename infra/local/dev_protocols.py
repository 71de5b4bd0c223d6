"""A2A streaming on `agentfn dev`: `SendStreamingMessage` and `SubscribeToTask` answered as
server-sent events, each event a JSON-RPC response whose result is an A2A StreamResponse,
as the official SDK's client reads them.

Deployed, API Gateway's REST API returns each Lambda answer whole, so the card says
`streaming: false` there and clients poll (SendMessage with returnImmediately, GetTask);
on loopback the card says `streaming: true` (handlers.protocols.public_base) and this
module keeps that promise. Every read goes through the API handler (a SendMessage with
`returnImmediately`, then GetTask), so a stream shows exactly what polling would; the live
hub only says when to read again. The stream ends when the task does, or when it needs
input (the client answers with another message, streamed or not).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from infra.local.live_hub import LiveHub

STREAM_METHODS = frozenset({"SendStreamingMessage", "SubscribeToTask"})
FINAL_STATES = frozenset(
    {
        "TASK_STATE_COMPLETED",
        "TASK_STATE_FAILED",
        "TASK_STATE_CANCELED",
        "TASK_STATE_REJECTED",
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_AUTH_REQUIRED",
    }
)
RECHECK_SECONDS = 1.0  # a read without news from the hub (a child run, a missed event)
MAX_STREAM_SECONDS = 3600.0
_A2A_PATH = re.compile(r"^/a2a/(?P<agent>[^/]+)/?$")


def wants_stream(method: str, path: str, body: bytes) -> bool:
    if method != "POST" or not _A2A_PATH.match(path):
        return False
    try:
        request = json.loads(body)
    except ValueError:
        return False
    return isinstance(request, dict) and request.get("method") in STREAM_METHODS


def serve(handler: Any, bridge: Callable[[dict[str, Any]], Any], hub: LiveHub, body: bytes) -> int:
    """Answers one streaming A2A request on `handler`; the HTTP status."""
    import time

    from infra.local.dev_gateway import proxy_event

    request = json.loads(body)
    request_id, params = request.get("id"), request.get("params")
    path = handler.path.split("?", 1)[0]
    kept = [(k, v) for k, v in handler.headers.items() if k.lower() not in {"content-length"}]
    client = {"source_ip": handler.client_address[0], "host": handler.headers.get("Host", "")}

    def rpc(method: str, params: Any) -> dict[str, Any]:
        payload = json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        )
        event = proxy_event("POST", path, kept, payload.encode(), **client)
        status, _, raw = bridge(event)
        if status != 200:
            message = f"the A2A endpoint answered HTTP {status}: {raw[:300]!r}"
            return {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32603, "message": message},
            }
        answer: dict[str, Any] = json.loads(raw)
        return answer

    def write(answer: dict[str, Any]) -> None:
        handler.wfile.write(f"data: {json.dumps(answer, separators=(',', ':'))}\n\n".encode())
        handler.wfile.flush()

    subscription = hub.subscribe(None)  # before the run can say anything
    try:
        if request["method"] == "SendStreamingMessage":
            sent = dict(params) if isinstance(params, dict) else params
            if isinstance(sent, dict):
                configuration = dict(sent.get("configuration") or {})
                configuration["returnImmediately"] = True  # the stream is the wait
                sent["configuration"] = configuration
            first = rpc("SendMessage", sent)
            task = (first.get("result") or {}).get("task")
        else:
            first = rpc("GetTask", params)
            task = first.get("result")
        handler.send_response(200)
        for name, value in (
            ("Content-Type", "text/event-stream; charset=utf-8"),
            ("Cache-Control", "no-cache"),
        ):
            handler.send_header(name, value)
        handler.end_headers()
        if task is None:  # an error: one event, then the end
            write(first)
            return 200
        write({"jsonrpc": "2.0", "id": request_id, "result": {"task": task}})
        seen = _state_of(task)
        ends = time.monotonic() + MAX_STREAM_SECONDS
        while seen[0] not in FINAL_STATES and time.monotonic() < ends:
            item = subscription.get(timeout=RECHECK_SECONDS)
            if item is not None and item.get("kind") == "closed":
                break
            answer = rpc("GetTask", {"id": task["id"]})
            current = answer.get("result")
            if current is None:
                write(answer)
                break
            state = _state_of(current)
            if state == seen:
                continue
            seen = state
            if state[0] in FINAL_STATES:  # the whole task: its artifacts too
                write({"jsonrpc": "2.0", "id": request_id, "result": {"task": current}})
            else:
                update = {"taskId": current["id"], "contextId": current.get("contextId", "")}
                update["status"] = current["status"]
                write({"jsonrpc": "2.0", "id": request_id, "result": {"statusUpdate": update}})
    except (BrokenPipeError, ConnectionResetError):
        pass  # the watcher went away; the run goes on
    finally:
        subscription.close()
    return 200


def _state_of(task: dict[str, Any]) -> tuple[str, str]:
    status = task.get("status") or {}
    return str(status.get("state") or ""), json.dumps(status.get("message"), sort_keys=True)
