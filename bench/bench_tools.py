"""The benchmark's tool package (a module is a package root here): one trivial tool."""


def noop(i: int = 0) -> dict[str, int]:
    return {"i": i}


async def anoop(i: int = 0) -> dict[str, int]:
    return {"i": i}
