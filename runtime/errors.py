"""Every error agentfn raises on purpose, as one tree.

    AgentfnError
    ├── SpecError                 the spec is invalid or cannot be loaded
    ├── RunError                  a run ends in `failed`; carries the result's error_code
    │   ├── MaxTurnsExceeded      MAX_TURNS_EXCEEDED
    │   ├── DoomLoop              DOOM_LOOP
    │   ├── ModelError            MODEL_ERROR
    │   │   └── TransientModelError   retried with backoff, then fallbacks
    │   ├── ToolFailed            TOOL_FAILED
    │   ├── OutputInvalid         OUTPUT_INVALID
    │   ├── SpecChanged           SPEC_CHANGED
    │   ├── HookDenied            HOOK_DENIED (an on_run_start hook refused the run)
    │   ├── McpUnavailable        MCP_UNAVAILABLE (a `required` MCP server cannot be used)
    │   ├── ToolImportFailed      TOOL_IMPORT (a Python tool's module does not import)
    │   └── SecretUnavailable     SECRET_UNAVAILABLE (a `${secret:…}` the run needs cannot be read)
    ├── StateConflict             a conditional write lost (someone else advanced the run)
    │   └── RunLeased             another worker holds the run's lease; retry later
    ├── RunNotFound               no run with that id
    ├── WrongState                the run is not in a state that allows this (API: 409)
    └── InvalidRequest            a caller's request names something wrong (API: 400/404)

Class names are stable: Step Functions `Retry`/`Catch` match on them (`ErrorEquals`).
"""

from __future__ import annotations


class AgentfnError(Exception):
    """Base of every deliberate agentfn error."""

    error_code = "INTERNAL"


class SpecError(AgentfnError):
    error_code = "SPEC_INVALID"


class RunError(AgentfnError):
    error_code = "INTERNAL"


class MaxTurnsExceeded(RunError):
    error_code = "MAX_TURNS_EXCEEDED"


class DoomLoop(RunError):
    error_code = "DOOM_LOOP"


class ModelError(RunError):
    error_code = "MODEL_ERROR"

    def __init__(self, message: str, *, status: int | None = None, provider: str = ""):
        super().__init__(message)
        self.status = status
        self.provider = provider


class TransientModelError(ModelError):
    """429/503/throttling/overloaded: worth retrying, after `retry_after` seconds if known."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider: str = "",
        retry_after: float | None = None,
    ):
        super().__init__(message, status=status, provider=provider)
        self.retry_after = retry_after


class ToolFailed(RunError):
    error_code = "TOOL_FAILED"


class OutputInvalid(RunError):
    error_code = "OUTPUT_INVALID"


class SpecChanged(RunError):
    error_code = "SPEC_CHANGED"


class HookDenied(RunError):
    error_code = "HOOK_DENIED"


class McpUnavailable(RunError):
    """A server marked `required: true` could not be started, reached or listed."""

    error_code = "MCP_UNAVAILABLE"


class ToolImportFailed(RunError):
    """A Python tool's (or hook's) module raised on import: named with its file and line."""

    error_code = "TOOL_IMPORT"


class SecretUnavailable(RunError):
    """A secret the run needs (a model's API key, a tool's or MCP server's credential) is not
    declared or cannot be read (runtime.secrets). Named, never its value. A run that cannot
    go on without it fails with this code; a model's missing key lets the next fallback try."""

    error_code = "SECRET_UNAVAILABLE"


class StateConflict(AgentfnError):
    error_code = "STATE_CONFLICT"


class RunLeased(StateConflict):
    error_code = "RUN_LEASED"


class RunNotFound(AgentfnError):
    error_code = "RUN_NOT_FOUND"


class WrongState(AgentfnError):
    error_code = "WRONG_STATE"

    def __init__(self, message: str, *, status: str):
        super().__init__(message)
        self.status = status


class InvalidRequest(AgentfnError):
    error_code = "INVALID_REQUEST"

    def __init__(self, message: str, *, field: str | None = None, not_found: bool = False):
        super().__init__(message)
        self.field = field
        self.not_found = not_found
