"""Where blocking tool code runs: a thread pool of the agent's own, sized by its parallelism.

A sync Python tool, or a Lambda tool (boto3 blocks), runs in a worker thread so that the
run's event loop keeps going. asyncio's default pool has `min(32, cpu_count + 4)` threads,
6 on a 2-vCPU Lambda: a step with more read-only calls than that ran them in batches. Each
agent gets its own pool of `tool_parallelism` threads (spec: agent, else defaults; 16 by
default), so k such calls take about as long as the slowest one for every k up to it.

Threads are started only when a call needs one and are kept for the next calls of the warm
container (a pool is never shut down: a run's leftover thread, e.g. one past its tool's
timeout, cannot hold up another agent's calls). An agent whose tools are all async starts
none.

Every such thread is a daemon, and nothing waits for it at the end: a call abandoned past
its timeout (a sync hook sleeping, a tool stuck in C code) must not keep `agentfn run`,
`agentfn dev` or a Lambda invocation alive. The standard ThreadPoolExecutor joins its
threads when the interpreter exits and `asyncio.run` waits for the default executor's, so
neither is used for code we do not control: `DaemonPool` here, and `run_loop` for the
event loop (its default executor, behind `asyncio.to_thread`, is a DaemonPool too).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import queue
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

DEFAULT_PARALLELISM = 16
#: The event loop's default executor (asyncio.to_thread): asyncio's own default size.
LOOP_THREADS = 32


class DaemonPool(ThreadPoolExecutor):
    """At most `size` daemon threads, started on demand and reused; `shutdown` never waits
    (a thread still running is abandoned with the process, as a daemon). A subclass only
    because asyncio's `set_default_executor` takes nothing else: none of the parent's
    machinery (non-daemon threads joined at exit) is used."""

    def __init__(self, size: int, name: str) -> None:
        super().__init__(size, name)
        self._size, self._name = size, name
        self._work: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None]
        self._work = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._started = 0

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        self._work.put((future, functools.partial(fn, *args, **kwargs)))
        if self._idle.acquire(blocking=False):
            return future  # a waiting thread takes it
        with self._lock:
            if self._started < self._size:
                self._started += 1
                name = f"{self._name}_{self._started}"
                threading.Thread(target=self._serve, name=name, daemon=True).start()
        return future

    def _serve(self) -> None:
        while (item := self._work.get()) is not None:
            future, call = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as exc:  # the caller's to handle, as in the stdlib
                    future.set_exception(exc)
            del item, future, call
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to wait for: idle threads block on an empty queue as daemons."""


def run_loop(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, except that a thread `asyncio.to_thread` started and abandoned
    (a timed-out sync hook) does not hold up the end: the default executor is a
    DaemonPool, whose shutdown returns at once."""
    with asyncio.Runner() as runner:
        runner.get_loop().set_default_executor(_LOOP_POOL)
        return runner.run(main)


#: One for every loop of the process (Lambda runs one loop per invocation): threads reused.
_LOOP_POOL = DaemonPool(LOOP_THREADS, "agentfn-loop")
_pools: dict[tuple[str, int], DaemonPool] = {}
_lock = threading.Lock()


def blocking_pool() -> DaemonPool:
    """The pool for built-in tools' blocking work (SQLite, the Data API)."""
    return pool("builtin", DEFAULT_PARALLELISM)


def pool(agent: str, size: int) -> DaemonPool:
    """The agent's pool of `size` threads (one per agent and size, for the process)."""
    key = (agent, size)
    found = _pools.get(key)
    if found is None:
        with _lock:
            found = _pools.get(key)
            if found is None:
                name = f"agentfn-tools-{agent}"[:40]
                found = _pools[key] = DaemonPool(size, name)
    return found


async def run_blocking(
    executor: Executor, func: Callable[..., T], /, *args: Any, **kwargs: Any
) -> T:
    """`func(*args, **kwargs)` in one of the pool's threads, with the caller's context
    variables (as asyncio.to_thread passes them)."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, func, *args, **kwargs)
    return await loop.run_in_executor(executor, call)
