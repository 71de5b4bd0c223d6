"""Every error agentfn raises on purpose, as one tree.

    AgentfnError
    ├── SpecError                 the spec is invalid or cannot be loaded
    ├── NotImplementedYet         a capability that a later release fills in
    ├── RunError                  a run ends in `failed`; carries the result's error_code
    │   ├── MaxTurnsExceeded      MAX_TURNS_EXCEEDED
    │   ├── DoomLoop              DOOM_LOOP
    │   ├── ModelError            MODEL_ERROR
    │   ├── ToolFailed            TOOL_FAILED
    │   ├── OutputInvalid         OUTPUT_INVALID
    │   └── SpecChanged           SPEC_CHANGED
    └── StateConflict             a conditional write lost (someone else advanced the run)

Class names are stable: Step Functions `Retry`/`Catch` match on them (`ErrorEquals`).
"""

from __future__ import annotations


class AgentfnError(Exception):
    """Base of every deliberate agentfn error."""

    error_code = "INTERNAL"


class SpecError(AgentfnError):
    error_code = "SPEC_INVALID"


class NotImplementedYet(AgentfnError):
    error_code = "NOT_IMPLEMENTED"


class RunError(AgentfnError):
    error_code = "INTERNAL"


class MaxTurnsExceeded(RunError):
    error_code = "MAX_TURNS_EXCEEDED"


class DoomLoop(RunError):
    error_code = "DOOM_LOOP"


class ModelError(RunError):
    error_code = "MODEL_ERROR"


class ToolFailed(RunError):
    error_code = "TOOL_FAILED"


class OutputInvalid(RunError):
    error_code = "OUTPUT_INVALID"


class SpecChanged(RunError):
    error_code = "SPEC_CHANGED"


class StateConflict(AgentfnError):
    error_code = "STATE_CONFLICT"
