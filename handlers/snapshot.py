"""Lambda SnapStart (`deployment.snapstart`): build at init what a first invocation would,
so the snapshot holds it, and renew in each restored copy what copies must not share.

Lambda initialises a SnapStart function once, when a version is published, snapshots the
whole process and resumes every new execution environment from that snapshot. So at init
(`AWS_LAMBDA_INITIALIZATION_TYPE=snap-start`, only in the function whose handler module
asks) `prepare` builds the service, its engine and spec, and loads botocore's data for the
clients every step makes; without SnapStart all of that waits for the first invocation
(handlers.coldstart), as before.

Renewed after each restore (`snapshot_restore_py`, in Lambda's Python runtime; absent
elsewhere, where nothing is ever restored):

- `random`'s state: every copy would draw the same trace and span ids
  (runtime.observability.ids) in the same order. uuid4 and `secrets` read the kernel's
  generator at each call, which the restore reseeds;
- the engine's lease owner id, made when the engine was built: two copies sharing it would
  each take the other's lease on a run for their own (Engine.renew, runtime.engine.toolsets);
- AWS clients: dropped before the snapshot (no socket or credentials in it) and again after
  the restore, boto3's session forgetting the credentials it resolved but keeping the
  service data already loaded (handlers.clients.drop_all); model and tool clients too;
- secrets read before the snapshot: their cache expires on `time.monotonic()`, which says
  nothing of the time the snapshot spent cached, so the copy reads them again. Nothing else
  keeps a clock reading from init: the clock is read at each use (runtime.clock).
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable
from typing import Any

log = logging.getLogger("agentfn.snapshot")
_renewals: list[Callable[[], None]] = []


def at_init(module: str) -> bool:
    """Whether this is a SnapStart init of the function whose handler is in `module` (the
    API function imports handlers.step too: only the handler's own module prepares)."""
    if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") != "snap-start":
        return False
    return os.environ.get("_HANDLER", "").rsplit(".", 1)[0] == module


def on_restore(renew: Callable[[], None]) -> None:
    """Run `renew` in each copy restored from the snapshot, after the renewals below."""
    _renewals.append(renew)


def before_snapshot() -> None:
    from handlers.clients import drop_all

    drop_all()


def after_restore() -> None:
    from handlers.clients import drop_all
    from runtime import secrets

    random.seed()  # from os.urandom, which differs in every restored copy
    drop_all()
    secrets.forget_fetched()
    for renew in _renewals:
        renew()


def register() -> bool:
    """Register the hooks with Lambda's runtime; False where there is no such runtime (a
    local run, the tests without their stand-in module)."""
    try:
        from snapshot_restore_py import (
            register_after_restore,
            register_before_snapshot,
        )
    except ImportError:
        return False
    register_before_snapshot(before_snapshot)
    register_after_restore(after_restore)
    return True


def prepare(build: Callable[[], Any]) -> Any:
    """The RunService (or what `build` makes) built now, at init, with the engine renewed in
    each restored copy; the DynamoDB and EventBridge clients are made once so botocore's
    service data is loaded into the snapshot (the clients themselves are dropped)."""
    from handlers.coldstart import first_invocation

    with first_invocation():
        service = build()
        run_service = getattr(service, "runs", service)  # a WorkflowService wraps one
        run_service.engine.store._ddb.meta, run_service.events.meta  # noqa: B018
        _import_what_a_step_imports(run_service)
    on_restore(run_service.engine.renew)
    register()
    return service


def _import_what_a_step_imports(run_service: Any) -> None:
    """What a first step would import on its way, imported now: the Logger (Powertools),
    the thread that runs the engine's event loop, the IDNA codec of botocore's first request,
    what the run records' first dump and load work out (runtime.structs.prepare),
    the spec's model providers and this agent's tools (built, then forgotten at restore by
    Engine.renew: only their modules stay). A model or tool that cannot be built without
    its secrets or its network is left to the first invocation, as without SnapStart."""
    import encodings.idna  # noqa: F401

    import runtime.tools.threads  # noqa: F401
    from handlers import observe
    from runtime.models.factory import build_model
    from runtime.store import records

    observe.logger()
    records.prepare()  # the records' dump plans and decoders
    engine = run_service.engine
    for name, config in engine.spec.models.items():
        try:
            build_model(name, config, lambda text: text)
        except Exception:  # the import is done; the model is made again after the restore
            log.debug("model %s not built at init", name, exc_info=True)
    if run_service.agent:
        try:
            engine.build_tools(run_service.agent)  # imports its tools' modules
        except Exception:
            log.debug("tools of %s not built at init", run_service.agent, exc_info=True)
