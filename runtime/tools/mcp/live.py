"""Every toolset with open MCP connections in this process, so a shutdown can close them.

A stdio server runs in a session of its own (the SDK starts it so, to kill its whole process
tree), so a signal to agentfn never reaches it: only the toolset that started it stops it,
when the advance that holds it ends. `agentfn dev` runs advances in many threads; when it is
told to stop it calls `stop_all`, which cancels each of those advances in its own event
loop and waits until their toolsets have stopped their servers.
"""

from __future__ import annotations

import asyncio
import threading
import time
from contextlib import suppress

_LIVE: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Task[object]]] = {}
_CHANGED = threading.Condition()


def register(key: int) -> None:
    """Called by a toolset entering its `async with`, from the task that holds it."""
    task = asyncio.current_task()
    if task is None:  # pragma: no cover - toolsets are entered from tasks
        return
    with _CHANGED:
        _LIVE[key] = (asyncio.get_running_loop(), task)


def unregister(key: int) -> None:
    """Called once the toolset has closed every connection (and stopped every process)."""
    with _CHANGED:
        _LIVE.pop(key, None)
        _CHANGED.notify_all()


def live_count() -> int:
    with _CHANGED:
        return len(_LIVE)


def stop_all(timeout: float) -> int:
    """Cancel every advance that holds MCP connections and wait (at most `timeout` seconds)
    until their servers are stopped. Returns how many toolsets were still open after that."""
    deadline = time.monotonic() + timeout
    with _CHANGED:
        for key, (loop, _) in list(_LIVE.items()):
            if loop.is_closed():  # its loop is gone: nothing of it can still run
                del _LIVE[key]
        holders = list(_LIVE.values())
    for loop, task in holders:
        with suppress(RuntimeError):  # its loop closed meanwhile: nothing left to cancel
            loop.call_soon_threadsafe(task.cancel)
    with _CHANGED:
        while _LIVE and (left := deadline - time.monotonic()) > 0:
            _CHANGED.wait(left)
        return len(_LIVE)
