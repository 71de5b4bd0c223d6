"""What the spec's two forms share, without pydantic: patterns, constants and small functions.

The spec has a validating form (the pydantic models of runtime.spec.*, used by `agentfn
build`, `validate` and `schema`) and a run-time form (runtime.spec.plain, generated from
them, what a deployed function reads). Both, and the code of either side, take these from
here, so a function that only runs agents never imports pydantic for them.
"""

import hashlib
import json
import re
from typing import Literal

SECRET_REF_PATTERN = r"\$\{secret:([A-Za-z][A-Za-z0-9_./-]{0,127})\}"
SECRET_REF_RE = re.compile(SECRET_REF_PATTERN)


def secret_names(text: str) -> list[str]:
    """The secret names referenced inside a string such as `Bearer ${secret:token}`."""
    return SECRET_REF_RE.findall(text)


Effect = Literal["read_only", "idempotent", "at_most_once"]

# `{name}` placeholders in an HTTP tool's URL template (`{{` is a literal brace).
URL_PARAM_RE = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")
PYTHON_HANDLER_RE = re.compile(
    r"^(?P<module>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*):(?P<attr>[A-Za-z_][A-Za-z0-9_]*)$"
)

#: Connect and list timeout of an MCP server that sets no `timeout`.
MCP_CONNECT_TIMEOUT = 30.0

HookEvent = Literal[
    "on_run_start", "pre_tool_use", "post_tool_use", "pre_response", "on_run_complete"
]
#: Events whose hooks see one tool call, and may be scoped with `match`.
TOOL_EVENTS = frozenset({"pre_tool_use", "post_tool_use"})
#: Events whose hooks may answer `deny`.
BLOCKING_EVENTS = frozenset({"on_run_start", "pre_tool_use", "pre_response"})
#: What a `modify` answer replaces, per event that allows it.
MODIFIES = {"pre_tool_use": "arguments", "post_tool_use": "result", "pre_response": "response"}


def strict_end(pattern: str) -> str:
    """`pattern` with each `$` anchor (outside a character class, not escaped) as `\\Z`,
    so it matches only at the very end of the text. Multi-line patterns are kept as written:
    there `$` means the end of each line."""
    if re.compile(pattern).flags & re.MULTILINE:
        return pattern
    out: list[str] = []
    index, in_class = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            out.append(char)
            index += 1
            # `[]…]` and `[^]…]`: a `]` first in a class is a character, not its end
            for literal in ("^", "]"):
                if index < len(pattern) and pattern[index] == literal:
                    out.append(literal)
                    index += 1
            continue
        elif char == "$":
            char = r"\Z"
        out.append(char)
        index += 1
    return "".join(out)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """How a `matches` rule reads its regex: ASCII classes, `$` at the very end."""
    return re.compile(strict_end(pattern), re.ASCII)


#: A trigger's sources; it has exactly one.
SOURCES = ("schedule", "webhook", "queue", "s3", "event")
#: A workflow step's kinds; it has exactly one.
STEP_KINDS = ("agent", "parallel", "map", "loop", "llm")

SEARCH_URLS = {
    "exa": "https://api.exa.ai/search",
    "tavily": "https://api.tavily.com/search",
    "brave": "https://api.search.brave.com/res/v1/web/search",
}
FIRECRAWL_URL = "https://api.firecrawl.dev/v2/scrape"


def compiled_hash(compiled: dict[str, object]) -> str:
    """The spec hash: of the compiled JSON, keys sorted (recorded on each run)."""
    canonical = json.dumps(compiled, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
