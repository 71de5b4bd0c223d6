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
import contextlib
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
        #: A submitted call with its Future, or a plain callable (`run`: it reports itself).
        self._work: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | Callable[[], Any]]
        self._work = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting for work (a plain lock and count: cheaper than a
        self._started = 0  # Semaphore, whose every acquire and release is Python code)

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        self._hand((future, functools.partial(fn, *args, **kwargs)))
        return future

    def run(self, work: Callable[[], Any]) -> None:
        """Run `work()` in a thread, with no Future: `work` reports its own outcome (what
        run_blocking hands over; it must not raise)."""
        self._hand(work)

    def _hand(self, item: tuple[Future[Any], Callable[[], Any]] | Callable[[], Any]) -> None:
        self._work.put(item)
        with self._lock:
            if self._idle:  # a waiting thread takes it
                self._idle -= 1
                return
            if self._started >= self._size:
                return  # the next thread to finish takes it
            self._started += 1
            name = f"{self._name}_{self._started}"
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    def _serve(self) -> None:
        while True:
            item = self._work.get()
            if isinstance(item, tuple):
                future, call = item
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(call())
                    except BaseException as exc:  # the caller's to handle, as in the stdlib
                        future.set_exception(exc)
                del future, call
            else:
                with contextlib.suppress(BaseException):  # `run`'s work reports its own
                    item()
            del item
            with self._lock:
                self._idle += 1

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
    variables (as asyncio.to_thread passes them).

    On a DaemonPool the thread resolves an asyncio future itself, through one
    `call_soon_threadsafe`: no concurrent Future, no chaining of two futures, no locks of
    theirs (a sync tool's every call pays this hop). As with `run_in_executor`, a call
    whose waiter was cancelled before a thread took it (its timeout ran out while it
    queued) never runs, and one cancelled while it runs finishes in its thread, its
    outcome dropped."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    if not isinstance(executor, DaemonPool):
        call = functools.partial(context.run, func, *args, **kwargs)
        return await loop.run_in_executor(executor, call)
    waiter: asyncio.Future[T] = loop.create_future()

    def work() -> None:
        if waiter.done():  # cancelled while it queued: never started
            return
        try:
            report: tuple[Callable[..., None], Any] = (_done, context.run(func, *args, **kwargs))
        except BaseException as exc:  # the awaiting task's to handle
            report = (_failed, exc)
        # The loop may have closed (an abandoned call's loop ended): nobody waits for it.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(report[0], waiter, report[1])

    executor.run(work)
    return await waiter


def _done(waiter: asyncio.Future[T], result: T) -> None:
    if not waiter.done():  # a cancelled waiter's result is dropped
        waiter.set_result(result)


def _failed(waiter: asyncio.Future[Any], exc: BaseException) -> None:
    if not waiter.done():
        waiter.set_exception(exc)
