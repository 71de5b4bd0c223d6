"""The sandbox function of `code_execute` (deployed): no IAM permissions, in a VPC without
egress. It only runs the code it is sent, with the runner's limits, and answers.

Lambda gives it no root, so the runner's namespaces are not there: a warm instance serves
its calls one after another with one /tmp. What a call leaves in /tmp is removed before the
answer, so the next call starts from an empty /tmp (the runner's supervisor has already
killed every process the call started, so nothing writes there any more)."""

from __future__ import annotations

import contextlib
import os
from typing import Any


def _empty(folder: str) -> None:
    import shutil

    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from runtime.tools.sandbox.runner import run_code

    try:
        return run_code(
            str(event.get("language")),
            str(event.get("code") or ""),
            timeout=float(event.get("timeout") or 30),
            memory_mb=int(event.get("memory_mb") or 256),
        )
    finally:
        if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):  # only Lambda's /tmp is the function's own
            _empty(os.environ.get("TMPDIR") or "/tmp")
