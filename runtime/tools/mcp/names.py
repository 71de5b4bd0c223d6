"""The names a model sees for MCP tools: `mcp__{server}__{tool}`, provider-safe, unique.

Providers accept tool names of at most 64 characters from `[A-Za-z0-9_-]`. A longer name is
cut and ends in a hash of the tool's whole identity, server and tool: hashing only the tool
made two servers whose names share a long prefix shorten their same-named tools alike, and
one server silently lost its tools. Names that still coincide (`a__b` + `c` and `a` + `b__c`,
or `x.y` and `x_y` on one server) are settled in the agent's order: the first keeps the
plain name, the next gets the hashed form and the run records a warning saying so.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME = 64


def tool_name(server: str, tool: str, *, hashed: bool = False, salt: str = "") -> str:
    """`mcp__{server}__{tool}` in the characters and length every provider accepts; a name
    that is shortened (or `hashed`) ends in a hash of `server/tool`, so it stays distinct."""
    name = f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_NAME and not hashed:
        return name
    digest = hashlib.sha256(f"{server}/{tool}{salt}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def assign_names(
    offers: Iterable[tuple[str, str]], taken: Iterable[str] = ()
) -> tuple[dict[tuple[str, str], str], list[tuple[str, str]]]:
    """A unique model-facing name for each (server, tool), in the given order, avoiding
    `taken`; and the collisions settled on the way, as (server, message) for warnings."""
    used: dict[str, tuple[str, str] | None] = dict.fromkeys(taken)
    names: dict[tuple[str, str], str] = {}
    collisions: list[tuple[str, str]] = []
    for server, tool in offers:
        plain = tool_name(server, tool)
        name, attempt = plain, 0
        while name in used:
            name = tool_name(server, tool, hashed=True, salt="" if not attempt else f"#{attempt}")
            attempt += 1
        if name != plain:
            owner = used[plain]
            other = f"mcp:{owner[0]}/{owner[1]}" if owner else "another tool of this agent"
            collisions.append(
                (
                    server,
                    f"tool {tool!r} is offered to the model as {name} because {plain} is "
                    f"already the name of {other}",
                )
            )
        used[name] = (server, tool)
        names[(server, tool)] = name
    return names, collisions
