"""`agentfn dev` picks up edits: the spec and the tools package are watched (watchfiles), and
a valid edit becomes a new generation of the stack without a restart.

- New runs use the newest spec: the API is served by the newest generation.
- Runs in flight keep theirs: each agent function's invocation goes to the generation whose
  spec the run was started with (the run head's `agent_hash`, the same pin that makes a
  deployed run fail `SPEC_CHANGED` rather than continue on another spec). So an edited prompt
  never reaches a run half way through, and nothing in flight fails because of an edit.
- An invalid edit keeps the last good generation serving; its problems are printed (file,
  line, key, as `agentfn validate` prints them) and shown by the console (`GET /dev/status`).
- The tools package's modules are imported afresh for each new generation.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Edits closer together than this are one reload (an editor's save is often several writes).
DEBOUNCE_MS = 300


@dataclass
class DevStatus:
    """What the console shows about the spec being served."""

    spec: str
    spec_hash: str
    generation: int = 1
    reloaded_at: float = field(default_factory=time.time)
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "spec_hash": self.spec_hash,
            "generation": self.generation,
            "reloaded_at": self.reloaded_at,
            "errors": list(self.errors),
        }


class Reloader:
    """The generations of the embedded stack, and the watch that makes new ones."""

    def __init__(
        self,
        spec_path: Path,
        env: str | None,
        first: Any,  # infra.local.embedded_stack.EmbeddedStack
        build: Callable[[Any], Any],  # spec → EmbeddedStack
    ):
        self.spec_path = spec_path
        self.env = env
        self._build = build
        self._lock = threading.Lock()
        self.generations: list[Any] = [first]
        self.status = DevStatus(str(spec_path), first.spec.spec_hash())
        self._route()

    @property
    def current(self) -> Any:
        return self.generations[-1]

    def watched(self) -> list[Path]:
        spec = self.current.spec
        folder = self.spec_path.resolve().parent
        paths = [self.spec_path.resolve()]
        tools = folder / spec.tools_package
        return [*paths, tools] if tools.is_dir() else paths

    def watch(self, stop: threading.Event) -> None:
        """Reload on each batch of changes until `stop` is set (a thread's target)."""
        import watchfiles

        for _changes in watchfiles.watch(
            *self.watched(), stop_event=stop, debounce=DEBOUNCE_MS, raise_interrupt=False
        ):
            try:
                self.reload()
            except Exception as exc:  # a reload must never stop the server
                self._problems([f"reload failed: {type(exc).__name__}: {exc}"])

    def reload(self) -> bool:
        """Validate the spec again and, when it is valid and different, serve it. True when a
        new generation serves now."""
        from infra.checks.issues import format_path
        from infra.checks.tool_imports import import_problems
        from infra.checks.validate import validate_file

        result = validate_file(self.spec_path, self.env)
        if not result.ok or result.spec is None:
            self._problems([str(issue) for issue in result.issues])
            return False
        spec = result.spec
        broken = list(import_problems(spec))  # as `agentfn validate`: a tool that won't import
        if broken:
            self._problems(
                [f"{self.spec_path}: {format_path(p.path)}: {p.message}" for p in broken]
            )
            return False
        with self._lock:
            if spec.spec_hash() == self.current.spec.spec_hash():
                self.status.errors = []
                return False
            _forget_modules(spec.tools_package)
            stack = self._build(spec)
            self.generations.append(stack)
            self._route()
            self.status = DevStatus(
                str(self.spec_path), spec.spec_hash(), len(self.generations), time.time()
            )
        print(
            f"reloaded {self.spec_path.name} (spec hash {spec.spec_hash()}): new runs use it; "
            "runs in flight keep the spec they started with",
            file=sys.stderr,
            flush=True,
        )
        return True

    def _problems(self, lines: list[str]) -> None:
        self.status.errors = lines
        print(
            "\n".join([*lines, f"kept the last good spec ({self.status.spec_hash})"]),
            file=sys.stderr,
            flush=True,
        )

    def _route(self) -> None:
        """Serve the API from the newest generation, and send each agent function's
        invocation to the generation its run was started with."""
        import handlers.step
        from infra.local.embedded_stack import function_arn
        from infra.local.local_lambda import register

        self.current.serve_api()
        agents = {a for stack in self.generations for a in stack.spec.agents}
        for agent in agents:
            register(function_arn(agent), self._dispatcher(agent, handlers.step.handler_for))

    def _dispatcher(self, agent: str, handler_for: Callable[[Any], Any]) -> Any:
        def handle(event: dict[str, Any], context: Any) -> Any:
            stack = self._stack_of(agent, event.get("run_id"))
            return handler_for(stack.step_services[agent])(event, context)

        return handle

    def _stack_of(self, agent: str, run_id: str | None) -> Any:
        from runtime.engine.compat import agent_hash
        from runtime.errors import RunNotFound

        newest = self.current
        if not run_id:
            return newest
        try:
            head = newest.service.engine.store.load_head(run_id)
        except RunNotFound:
            return newest
        for stack in reversed(self.generations):
            spec = stack.spec
            known = head.agent in spec.agents and agent in spec.agents
            if known and agent_hash(spec.to_runtime(), head.agent) == head.agent_hash:
                return stack
        return newest  # started on no spec served here: the engine says SPEC_CHANGED


def _forget_modules(package: str) -> None:
    """The tools package is imported afresh by the next generation's tools."""
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]


def start_reloading(
    stack: Any,
    spec_path: Path,
    env: str | None,
    clients: Any,
    watch: dict[str, Any],
    stop: threading.Event,
) -> None:
    """Watch the spec and its tools; each valid edit a new generation (infra.local.dev_reload)."""
    from infra.local import dev_console
    from infra.local.embedded_stack import EmbeddedStack

    def build(spec: Any) -> Any:  # a reloaded spec's state machines come from the spec
        return EmbeddedStack(spec, clients, engine_options=watch)

    reloader = Reloader(spec_path, env, stack, build)
    dev_console.status_source = lambda: reloader.status.as_dict()
    threading.Thread(target=reloader.watch, args=(stop,), daemon=True).start()
