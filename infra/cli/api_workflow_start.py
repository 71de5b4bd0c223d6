"""`agentfn start WORKFLOW …`: a workflow run started over the HTTP API, found by its name
(or `--workflow`), its input JSON when it parses as JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any
from urllib.parse import quote

from infra.cli.api_base import EXIT_OK, ApiError, Client


def workflow_names(client: Client) -> list[str]:
    try:
        listed = client.get("/workflows").get("workflows", [])
    except ApiError:
        return []
    return [w["name"] if isinstance(w, dict) else str(w) for w in listed]


def start_workflow(client: Client, args: argparse.Namespace) -> int:
    """`POST /workflows/{name}/runs`: the input is JSON when it parses as JSON (a workflow
    with an input_schema takes an object), else the text."""
    text = " ".join(args.input)
    try:
        given: Any = json.loads(text)
    except ValueError:
        given = text
    _, run = client.post(f"/workflows/{quote(args.agent, safe='')}/runs", {"input": given})
    if args.json:
        print(json.dumps(run, indent=2, ensure_ascii=False, default=str))
    else:
        head = [run.get("workflow_run_id"), run.get("workflow"), run.get("status")]
        print("workflow run " + " · ".join(str(part) for part in head))
        for step in run.get("steps", []):
            print(f"  {step.get('id')}: {step.get('status')}")
    return EXIT_OK
