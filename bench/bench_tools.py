"""The benchmark's tool package (a module is a package root here): trivial tools."""

import time


def noop(i: int = 0) -> dict[str, int]:
    return {"i": i}


async def anoop(i: int = 0) -> dict[str, int]:
    return {"i": i}


def nap(seconds: float = 0.2, i: int = 0) -> float:
    """A read-only sync tool that blocks (a slow API called with a blocking client)."""
    time.sleep(seconds)
    return seconds
