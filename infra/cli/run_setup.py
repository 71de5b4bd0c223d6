"""What `agentfn run` (and `agentfn workflow`, and the local answers of `agentfn approve`…)
prepare before a run: the spec's tools on sys.path, the `.env` beside the spec, and which
embedded AWS they open (`--offline`, or the local state beside the spec).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from infra.local.local_state import state_dir

_IGNORE_ENDPOINTS = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"


def load_dotenv(path: Path) -> list[str]:
    """`KEY=VALUE` lines of a `.env` file (git-ignored; e.g. AGENTFN_SECRET_OPENAI=…) into
    the environment, never over a variable already set. The names set."""
    if not path.is_file():
        return []
    loaded = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if key and key not in os.environ:
            os.environ[key] = value
            loaded.append(key)
    return loaded


def prepare_project(spec_file: str) -> None:
    """The spec's own tools package on sys.path; its `.env` in the environment; AWS_REGION
    (what the AWS CLI and the other SDKs read) as the region of boto3's clients too (boto3
    reads only AWS_DEFAULT_REGION)."""
    project = Path(spec_file).resolve().parent
    if str(project) not in sys.path:
        sys.path.insert(0, str(project))
    load_dotenv(project / ".env")
    if os.environ.get("AWS_REGION") and not os.environ.get("AWS_DEFAULT_REGION"):
        os.environ["AWS_DEFAULT_REGION"] = os.environ["AWS_REGION"]


@contextmanager
def stack_clients(spec_file: str, offline: bool) -> Iterator[Any]:
    """The embedded AWS: in memory for everything (`--offline`), or the stack's own
    resources kept in the local state, everything else real (infra.local.aws)."""
    from infra.local.aws import embedded_aws, local_aws

    if offline:
        # Every AWS call is moto's: no AWS_ENDPOINT_URL_* (nor a profile's endpoint_url) may
        # send one elsewhere.
        saved = os.environ.get(_IGNORE_ENDPOINTS)
        os.environ[_IGNORE_ENDPOINTS] = "true"
        try:
            with embedded_aws() as clients:
                yield clients
        finally:
            if saved is None:
                os.environ.pop(_IGNORE_ENDPOINTS, None)
            else:
                os.environ[_IGNORE_ENDPOINTS] = saved
        return
    directory = state_dir(spec_file)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SystemExit(
            f"agentfn: cannot keep the local state in {directory}: {exc.strerror}; set "
            "AGENTFN_STATE_DIR to a writable directory, or run with --offline"
        ) from None
    with local_aws(directory) as clients:
        yield clients
