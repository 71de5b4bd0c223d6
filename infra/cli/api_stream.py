"""`agentfn events --follow` over a run's SSE stream (`GET /runs/{id}/stream`, served by
`agentfn dev`): each committed event as a line, the answer's text as it is written."""

from __future__ import annotations

import json
import sys
from typing import Any

TEXT_INDENT = "      "


def follow_stream(client: Any, path: str, after: int, as_json: bool) -> int | None:
    """Prints the stream until the run ends; the last event number. None when the server
    has no stream (the deployed REST API): the caller long-polls instead."""
    import httpx

    from infra.cli.api_base import ApiError, is_local
    from infra.cli.api_views import event_line

    headers = {"accept": "text/event-stream", "last-event-id": str(after)}
    url = client.url + path
    if client.signer is not None:
        return None  # the deployed API: no SSE behind API Gateway's REST API
    writing = False
    try:
        with httpx.stream(
            "GET", url, headers=headers, timeout=httpx.Timeout(60, read=None),
            trust_env=not is_local(client.url),
        ) as response:  # fmt: skip
            kind = response.headers.get("content-type", "")
            if response.status_code != 200 or "text/event-stream" not in kind:
                return None  # no stream here (or no such run: the polling path says so)
            event = ""
            for line in response.iter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data = json.loads(line[5:].strip())
                    if event == "chunk":
                        writing = _chunk(data, writing, as_json)
                        continue
                    if writing:
                        sys.stdout.write("\n")
                        writing = False
                    after = int(data.get("seq", after))
                    print(json.dumps(data, ensure_ascii=False) if as_json else event_line(data))
                    sys.stdout.flush()
    except httpx.ConnectError as exc:
        raise ApiError(f"cannot reach {client.url}: {exc}") from exc
    if writing:
        sys.stdout.write("\n")
    return after


def _chunk(chunk: dict[str, Any], writing: bool, as_json: bool) -> bool:
    if as_json:
        print(json.dumps({"type": "chunk", **chunk}, ensure_ascii=False), flush=True)
        return False
    text = str(chunk.get("text", "")).replace("\n", "\n" + TEXT_INDENT)
    sys.stdout.write(("" if writing else TEXT_INDENT) + text)
    sys.stdout.flush()
    return True
