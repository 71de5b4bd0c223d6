"""`agentfn dev` under load: requests served at once, as API Gateway and Lambda serve them.

- **Containers.** API Gateway sends concurrent requests to different warm containers of the
  API function; each container serves one request at a time. `ApiContainers` does the same
  with `handlers.api.container()`: a request takes an idle container, or a new one (a
  resolver costs a few milliseconds once the first is built), and gives it back when it
  has answered. Powertools' REST resolver keeps the request it serves on the resolver
  (route, parameters, the parsed body): one container per request keeps that apart.
- **Powertools' class-level request.** The resolver also stores the current event and Lambda
  context on its base class (`BaseRouter.current_event`, so that routers share them), a
  single slot for the whole process. `per_thread_router_state()` makes that slot one per
  thread: each request runs in a thread of its own and reads back what it wrote.
- **moto.** moto's backends are not thread-safe (and infra.local.local_dynamodb relies on one
  request at a time). `serialized(app)` wraps moto's WSGI app so that DynamoDB and S3
  requests, which never call out, run one at a time; every other service runs as it comes
  (a Lambda invoke runs an agent's step, which itself calls DynamoDB: it must not wait for a
  lock it would be holding).
"""

from __future__ import annotations

import re
import threading
from abc import ABCMeta
from collections.abc import Callable, Iterable
from typing import Any

Handler = Callable[[dict[str, Any], Any], Any]

#: What moto's server answers one request at a time: services whose requests never call out.
SERIALIZED_SERVICES = frozenset({"dynamodb", "s3"})
_SERVICE = re.compile(r"Credential=[^/]*/[^/]*/[^/]*/([^/]+)/")
_MOTO_REQUESTS = threading.Lock()


class ApiContainers:
    """Calls the API handler in an idle container, as Lambda would; builds one when none is
    idle. `in_flight()` is how many requests are being served."""

    def __init__(self, new_container: Callable[[], Handler]):
        self._new = new_container
        self._idle: list[Handler] = []
        self._lock = threading.Lock()
        self._busy = 0
        self._drained = threading.Condition(self._lock)
        per_thread_router_state()

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        with self._lock:
            handler = self._idle.pop() if self._idle else None
            self._busy += 1
        try:
            if handler is None:
                handler = self._new()
            return handler(event, context)
        finally:
            with self._lock:
                if handler is not None:
                    self._idle.append(handler)
                self._busy -= 1
                self._drained.notify_all()

    def in_flight(self) -> int:
        with self._lock:
            return self._busy

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no request is being served (at most `timeout` seconds)."""
        with self._drained:
            return self._drained.wait_for(lambda: self._busy == 0, timeout)

    def containers(self) -> int:
        """Containers built so far (idle ones; while requests run, add in_flight())."""
        with self._lock:
            return len(self._idle)


class _PerThread(ABCMeta):
    """The metaclass given to Powertools' BaseRouter: its class-level `current_event` and
    `lambda_context` become one slot per thread (see per_thread_router_state)."""

    _slots = threading.local()

    @property
    def current_event(cls) -> Any:
        return getattr(_PerThread._slots, "current_event", None)

    @current_event.setter
    def current_event(cls, value: Any) -> None:
        _PerThread._slots.current_event = value

    @property
    def lambda_context(cls) -> Any:
        return getattr(_PerThread._slots, "lambda_context", None)

    @lambda_context.setter
    def lambda_context(cls, value: Any) -> None:
        _PerThread._slots.lambda_context = value


_router_lock = threading.Lock()


def per_thread_router_state() -> None:
    """Make `BaseRouter.current_event` and `.lambda_context` thread-local (once per process).

    Powertools writes them on the class (`BaseRouter.current_event = …`) and reads them on
    the resolver (`self.current_event`): the metaclass catches the class-level writes and
    reads, and a property on the class the reads through an instance."""
    from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

    with _router_lock:
        if type(BaseRouter) is _PerThread:
            return
        for name in ("current_event", "lambda_context"):
            slot: Any = getattr(_PerThread, name)
            setattr(BaseRouter, name, property(slot.fget, slot.fset))  # the instances' view
        # The class's own view, class-level writes included:
        BaseRouter.__class__ = _PerThread  # type: ignore[method-assign,assignment]


def serialized(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """moto's WSGI app, with DynamoDB and S3 requests one at a time (the body is produced
    before the lock is released: moto builds it in full)."""

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        found = _SERVICE.search(environ.get("HTTP_AUTHORIZATION", ""))
        if found is None or found.group(1) not in SERIALIZED_SERVICES:
            return app(environ, start_response)
        with _MOTO_REQUESTS:
            return list(app(environ, start_response))

    return serve
