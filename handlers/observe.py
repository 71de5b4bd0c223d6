"""Logs and metrics of a Lambda invocation, shared by every function (API, agents, sweeper).

Logs: one Powertools Logger named `agentfn`, made once per container. Every runtime logger
is an `agentfn.*` child of it, so each of their lines is written as JSON by it, at the level
`deployment.log_level` sets (POWERTOOLS_LOG_LEVEL, and Lambda's own ApplicationLogLevel in
the template: without it the engine's INFO lines were dropped), carrying the run keys of
runtime.observability.logs (`run_id`, `agent`, `session_id`, `step`) while a run is handled.
Every resolved secret is redacted from what it writes (runtime.secrets.protect_logs).

Metrics: one RunMetrics per container, the engine's listener (`listener`), printed as EMF
once at the end of every invocation (`invocation`), whatever the invocation did or raised.

Importing this module loads the standard library only; Powertools loads on the first
invocation (the Logger) and the engine never waits for either.
The first invocation of a container runs inside `handlers.coldstart.first_invocation`.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import IO, Any

LOGGER_NAME = "agentfn"  # the parent of every runtime logger (`agentfn.service`, …)
STACK_ENV = "AGENTFN_STACK_NAME"  # the metrics' `service` dimension

_logger: Any = None
_metrics: Any = None
_cold = True


def logger(stream: IO[str] | None = None) -> Any:
    """The functions' Powertools Logger, made on first use (`stream`: where it writes, for
    tests; by default stdout, which Lambda sends to the function's log group)."""
    global _logger
    if _logger is None:
        from aws_lambda_powertools import Logger

        from runtime.observability.logs import CONTEXT
        from runtime.secrets import protect_logs

        made = Logger(service=LOGGER_NAME, stream=stream)
        protect_logs(logging.getLogger(), logging.getLogger(LOGGER_NAME))
        CONTEXT.enable(made.append_keys, made.remove_keys)
        _logger = made
    return _logger


def listener(store: Any = None) -> Any:
    """The engine's EventListener in a deployed function: the container's RunMetrics
    (`store`: where it reads an approval's request when another process saw it)."""
    global _metrics
    if _metrics is None:
        from runtime.observability.metrics import RunMetrics

        _metrics = RunMetrics(
            os.environ.get(STACK_ENV) or LOGGER_NAME,
            store=store,
            default_agent=os.environ.get("AGENTFN_AGENT") or None,
        )
    if store is not None:
        _metrics.store = store
    return _metrics


@contextmanager
def invocation(context: Any, run_id: str | None = None) -> Iterator[Any]:
    """Around one invocation: the Logger with the invocation's keys (request id, cold start)
    and no run's until one is handled (`run_id`: this one, from the start); the metrics of
    everything committed meanwhile printed at the end."""
    global _cold
    with ExitStack() as first:
        if _cold:
            from handlers.coldstart import first_invocation

            first.enter_context(first_invocation())
        from runtime.observability.logs import CONTEXT

        log = logger()
        log.clear_state()
        CONTEXT.forget()
        keys: dict[str, Any] = {"cold_start": _cold}
        request_id = getattr(context, "aws_request_id", None)
        if isinstance(request_id, str):
            keys["function_request_id"] = request_id
        log.append_keys(**keys)
        _cold = False
        try:
            with CONTEXT.scope(run_id):
                yield log
        finally:
            flush()


def flush() -> None:
    """Print the metrics kept so far (nothing when there are none); never raises: a metric
    lost is better than an answer lost."""
    if _metrics is None or not _metrics.pending:
        return
    try:
        _metrics.flush()
    except Exception:
        logging.getLogger("agentfn.metrics").warning("metrics not flushed", exc_info=True)


def reset() -> None:
    """Forget the Logger and the metrics (tests: a fresh container)."""
    global _logger, _metrics, _cold
    from runtime.observability.logs import CONTEXT

    CONTEXT.disable()
    if _logger is not None:
        named = logging.getLogger(LOGGER_NAME)
        for handler in list(named.handlers):
            named.removeHandler(handler)
        for attribute in ("init", "powertools_handler"):
            if hasattr(named, attribute):
                delattr(named, attribute)
    _logger = _metrics = None
    _cold = True
    gc.unfreeze()  # a fresh container freezes its own
