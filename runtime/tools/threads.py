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
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

DEFAULT_PARALLELISM = 16

_pools: dict[tuple[str, int], ThreadPoolExecutor] = {}
_lock = threading.Lock()


def pool(agent: str, size: int) -> ThreadPoolExecutor:
    """The agent's pool of `size` threads (one per agent and size, for the process)."""
    key = (agent, size)
    found = _pools.get(key)
    if found is None:
        with _lock:
            found = _pools.get(key)
            if found is None:
                name = f"agentfn-tools-{agent}"[:40]
                found = _pools[key] = ThreadPoolExecutor(size, thread_name_prefix=name)
    return found


async def run_blocking(
    executor: ThreadPoolExecutor, func: Callable[..., T], /, *args: Any, **kwargs: Any
) -> T:
    """`func(*args, **kwargs)` in one of the pool's threads, with the caller's context
    variables (as asyncio.to_thread passes them)."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, func, *args, **kwargs)
    return await loop.run_in_executor(executor, call)
