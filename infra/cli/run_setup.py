"""What `agentfn run` (and `agentfn workflow`, and the local answers of `agentfn approve`…)
prepare before a run: the spec's tools on sys.path, the `.env` beside the spec
(`prepare_project`, infra.local.project: `agentfn dev` prepares the same way), and which
embedded AWS they open (`--offline`, or the local state beside the spec).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from infra.local.local_state import state_dir
from infra.local.project import prepare_project

__all__ = ["prepare_project", "stack_clients"]

_IGNORE_ENDPOINTS = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"


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
