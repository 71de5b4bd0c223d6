"""Where a spec's relative paths start, and how a stdio MCP server's paths resolve from there.

Every path in a spec (a knowledge folder, a SQLite file, a stdio MCP server's `command`,
`args` and `cwd`) means the same thing in `validate`, `run`, `dev` and `build`: relative to
the spec's own folder, wherever the command was started from. Deployed, that folder is the
Lambda package's root, where `agentfn build` put the same files at the same relative paths.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from runtime.spec.plain import AgentfnSpec, HttpMcpServer, StdioMcpServer

McpServer = StdioMcpServer | HttpMcpServer


def project_dir(spec: AgentfnSpec) -> Path:
    """Where relative paths of the spec start: the spec's own folder (the Lambda package's
    root when deployed). A spec built in memory falls back to the folder holding the tools
    package, then the current folder."""
    import importlib.util

    known = spec.project_dir()
    if known is not None:
        return known
    found = importlib.util.find_spec(spec.tools_package)
    if found is None or not found.submodule_search_locations:
        return Path.cwd()
    return Path(next(iter(found.submodule_search_locations))).parent


def is_path(value: str) -> bool:
    """A command or argument written as a path (`./server.py`, `bin/run`, `../x`), not a
    bare program name looked up on PATH (`npx`) nor an option or module name (`-m`, `a.b`)."""
    return "/" in value and not value.startswith("-") and "://" not in value


def stdio_at(config: McpServer, project: Path) -> McpServer:
    """`config` with its folder and paths made absolute: the server starts in `cwd` (relative
    to the project; the project itself when absent), and a `command` or an argument written
    as a relative path is taken from that folder, as a shell started there would."""
    if not isinstance(config, StdioMcpServer):
        return config
    folder = project / config.cwd if config.cwd else project
    command = str(folder / config.command) if _relative(config.command) else config.command
    args = [str(folder / a) if _relative(a) and (folder / a).exists() else a for a in config.args]
    return msgspec.structs.replace(config, cwd=str(folder), command=command, args=args)


def _relative(value: str) -> bool:
    return is_path(value) and not Path(value).is_absolute()
