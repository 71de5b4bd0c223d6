"""`agentfn dev`'s AWS clients and its hold on the project's local state.

By default dev is `agentfn run`'s twin (infra.local.aws): only the stack's own clients talk to
its moto server, whose DynamoDB and S3 state is the project's local state
(`.agentfn/local/`, infra.local.local_state) — so a run `agentfn run` left waiting shows in dev's
API and console and is decided there, and a run started on dev is seen by `agentfn status
RUN_ID` without any server. Everything else (Bedrock, Lambda tools by ARN, knowledge bases,
AgentCore, secrets, the RDS Data API) uses the user's credential chain, region and
AWS_ENDPOINT_URL_*. `--offline` is the old all-in-moto dev: every boto3 client of the
process goes to the server with dummy credentials, and nothing is kept.

While dev runs it holds `dev.lock` in the state directory (an flock, gone with the
process, even on kill -9) and writes its API's URL to `dev.json`: the run commands
(`agentfn approve|reply|cancel|status|events RUN_ID`) then ask dev over HTTP instead of
opening the state themselves, because dev's Step Functions executions wait on the runs it
started, and only dev can resume them. A second dev on the same state is refused.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

HOLD_NAME = "dev.lock"
URL_NAME = "dev.json"


class StateHeld(RuntimeError):
    """Another `agentfn dev` serves this local state."""


def state_for(spec_path: Path, offline: bool) -> Path | None:
    """The local state dev shares with `agentfn run` (None with --offline: nothing kept).
    SystemExit naming the directory when it cannot be made."""
    if offline:
        return None
    from infra.local.local_state import state_dir

    directory = state_dir(spec_path)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SystemExit(
            f"agentfn dev: cannot keep the local state in {directory}: {exc.strerror}; set "
            "AGENTFN_STATE_DIR to a writable directory, or run with --offline"
        ) from None
    return directory


def hold(directory: Path, api_url: str) -> IO[str]:
    """Take `directory` for this dev (kept until the returned file is closed) and say where
    its API listens. StateHeld when another dev has it."""
    handle = open(directory / HOLD_NAME, "a+")  # noqa: SIM115 - held for the process
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        other = holder(directory) or "another process"
        raise StateHeld(
            f"another agentfn dev ({other}) serves the local state in {directory}; stop it, "
            "or start this one with --offline (or AGENTFN_STATE_DIR=another directory)"
        ) from None
    temporary = directory / (URL_NAME + ".new")
    temporary.write_text(json.dumps({"url": api_url, "pid": os.getpid()}), encoding="utf-8")
    os.replace(temporary, directory / URL_NAME)
    return handle


def holder(directory: Path) -> str | None:
    """The API URL of the `agentfn dev` that holds `directory` now, or None."""
    path = directory / HOLD_NAME
    if not path.exists():
        return None
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:  # held: dev runs
            try:
                url = json.loads((directory / URL_NAME).read_text(encoding="utf-8"))["url"]
            except (OSError, ValueError, KeyError, TypeError):
                return None
            return str(url)
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None


@contextmanager
def dev_aws(aws: Any, offline: bool) -> Iterator[None]:
    """The process's environment for dev's stack (infra.local.dev_aws), and the stack's Lambda
    functions dispatched to its handlers in process (infra.local.local_lambda)."""
    from infra.local.dev_aws import pointed_at, stack_only
    from infra.local.local_lambda import dispatching

    with ExitStack() as stack:
        stack.enter_context(pointed_at(aws.url, aws.port) if offline else stack_only(aws.port))
        stack.enter_context(dispatching())
        yield


def dev_clients(aws: Any, offline: bool) -> Any:
    """The stack's own clients on dev's moto server (its tables and bucket made, as the
    template declares them); `endpoint` set unless offline, so the embedded stack leaves
    every other AWS call to the user's environment."""
    from infra.local.aws import (
        LOCAL_BUCKET,
        LOCAL_TABLE,
        AwsClients,
        create_resources,
        stack_client,
    )
    from infra.local.dev_aws import create_watch_key

    clients = AwsClients(
        stack_client("dynamodb", aws.url),
        stack_client("s3", aws.url),
        LOCAL_TABLE,
        LOCAL_BUCKET,
        stack_client("lambda", aws.url),
        endpoint=None if offline else aws.url,
    )
    create_resources(clients)
    create_watch_key(aws.url)
    return clients


def template_for(spec: Any, spec_path: Path) -> Path | None:
    """The committed template.yaml next to the spec when it is what the spec produces, else
    None (the stack generates the definitions itself)."""
    from infra.sam.template import build_template, render

    committed = spec_path.resolve().parent / "template.yaml"
    if not committed.exists() or committed.read_text("utf-8") == render(build_template(spec)):
        return committed if committed.exists() else None
    note = f"note: {committed.name} is out of date with {spec_path.name}; using the state"
    print(f"{note} machines generated from the spec (`agentfn build` updates it)", file=sys.stderr)
    return None


#: How far ahead `list_others_runs` asks the sweep index: every unfinished run is due by then.
_EVERY_UNFINISHED = 100 * 365 * 86400
#: At most one look at the sweep index (16 queries) per this many seconds.
REFRESH_SECONDS = 2.0


def list_others_runs(store: Any, hub: Any) -> None:
    """Have the console's run list (`GET /runs`, infra.local.dev_console) show the unfinished runs
    of the shared local state that this dev did not start — a run `agentfn run` left
    waiting for approval is listed, and can be opened and decided there. The sweep index
    holds exactly the unfinished runs (runtime.sweeper), so this reads no finished run; each
    run is read once, then its events here keep it current."""
    import time

    from infra.local import dev_console
    from infra.local.live_hub import RECENT_RUNS

    last = [0.0]

    def refresh() -> None:
        if time.monotonic() - last[0] < REFRESH_SECONDS:  # the console polls every 3 s
            return
        last[0] = time.monotonic()
        for run_id in store.due_runs(time.time() + _EVERY_UNFINISHED, RECENT_RUNS):
            if hub.knows(run_id):
                continue
            head = store.load_head(run_id)
            first = store.list_events(run_id, after=-1, limit=1)
            given = first[0].data.get("input") if first else None
            hub.remember(
                {
                    "run_id": run_id,
                    "agent": head.agent,
                    "input": str(given or "")[:200],
                    "started_at": head.created_at,
                    "status": head.status,
                    "updated_at": head.updated_at,
                }
            )

    dev_console.runs_source = refresh
