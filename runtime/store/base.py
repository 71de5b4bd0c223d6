"""The run store contract: a run is the sequence of its commits.

Every change to a run is a `Commit`: the new head (made from the version that was read),
plus the messages and events it adds. A store applies a commit atomically or not at all,
and only over the version it was made from (StateConflict otherwise), so a crash leaves the
run exactly at its last commit and a retried step can never duplicate anything. Nothing
here grows with the conversation: a commit writes only its own additions and the small
head (runtime.store.records: one item per commit on DynamoDB).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import msgspec

from runtime.errors import InvalidRequest
from runtime.events import Event
from runtime.messages import Message, Usage
from runtime.structs import Record, load

Status = Literal[
    "running",
    "awaiting_approval",
    "awaiting_input",
    "awaiting_children",
    "succeeded",
    "failed",
    "cancelled",
]
TERMINAL: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
PAUSED: frozenset[str] = frozenset({"awaiting_approval", "awaiting_input", "awaiting_children"})


class Clarification(Record, kw_only=True):
    question: str
    reason: str | None = None
    tool_call_id: str
    expires_at: float = 0.0  # when the question times out (0: runs from before this field)


class PendingApproval(Record, kw_only=True):
    tool_call_id: str
    tool_name: str
    inputs: dict[str, Any] | None
    expires_at: float
    decisions: list[str]
    timeout_seconds: int = 0  # the rule's timeout: picks the state machine's wait state


class RemoteTask(Record, kw_only=True):
    """A remote A2A agent's task answering one ask call (runtime.protocols.a2a_client): what
    the state machine last saw of it. `task_id` is empty until the remote accepted the
    message; `answer` / `error` once it ended; `question` while it waits for input."""

    task_id: str = ""
    context_id: str = ""
    state: str = ""  # the A2A TaskState's name
    answer: Any = None
    error: str | None = None
    question: dict[str, Any] | None = None  # {"text", "data"}: the remote's status message
    failures: int = 0  # reads in a row that failed (network, 5xx): it ends after a few
    checked_at: float = 0.0

    @property
    def ended(self) -> bool:
        return self.answer is not None or self.error is not None


class ChildRun(Record, kw_only=True):
    """A sub-agent asked as a tool: its own run, answering one tool call of this run (for a
    remote A2A agent, `remote` holds its task and `run_id` is only the call's own id)."""

    tool_call_id: str
    run_id: str
    agent: str
    remote: RemoteTask | None = None


class HelpRequest(Record, kw_only=True):
    """A sub-agent handed the conversation back with `request_help`; shown to the supervisor
    until it answers."""

    agent: str
    reason: str


class ApprovalDecision(Record, kw_only=True):
    approved: bool
    reason: str | None = None
    edited_inputs: dict[str, Any] | None = None
    timed_out: bool = False
    by: str | None = None  # the caller's identity (IAM principal or authorizer claims)

    def same_as(self, other: ApprovalDecision) -> bool:
        """The same answer (a repeated request), whoever sent it."""
        return (self.approved, self.reason, self.edited_inputs, self.timed_out) == (
            other.approved,
            other.reason,
            other.edited_inputs,
            other.timed_out,
        )


class Spend(Record, kw_only=True):
    """Tokens (input and output) and US dollars: what budgets count."""

    tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Spend) -> Spend:
        return Spend(tokens=self.tokens + other.tokens, cost_usd=self.cost_usd + other.cost_usd)


class SessionState(Record, kw_only=True):
    """Who has a session's conversation and what its finished runs spent."""

    chain: list[str] = msgspec.field(default_factory=list)
    spent: Spend = msgspec.field(default_factory=Spend)


class ContextState(Record, kw_only=True):
    """What compaction has done to the run's context (runtime.engine.context). The prompt is
    derived from this and the persisted messages: nothing pruned is ever rewritten."""

    base: int = 0  # first message sent (and loaded); those before it are in the summary
    summary_seq: int | None = None  # the summary in force (a SummaryMessage at seq >= base)
    pruned_before: int = 0  # tool results before this seq are sent as cache placeholders
    history_pruned: bool = False  # the session history's tool results are placeholders too
    changed_at: int = 0  # msg_seq when this last changed: answers before it saw another view
    compactions: int = 0
    failures: int = 0  # compactions that did not bring the prompt under the threshold
    answers_before: dict[str, int] = msgspec.field(default_factory=dict)  # per agent, before `base`


class HookProgress(Record, kw_only=True):
    """How far the automatic hooks of one tool call (keyed by its id) or of the run's start
    (`@run_start`) have got, committed after each hook that was asked (http, python,
    lambda) so that a crash never asks one twice: rule hooks are simply evaluated again."""

    done: int = 0  # hooks of the chain already applied
    denied: str | None = None  # why a hook denied (the chain stops there)
    arguments: dict[str, Any] | None = None  # the arguments as hooks replaced them


class TraceRef(Record, kw_only=True):
    """Where a run's spans go (runtime.observability.tracing): one trace for the whole run,
    whichever process advances it after whatever pause. `span_id` is the run's root span,
    emitted when the run ends, under `parent_span_id` (a child run: its parent's root)."""

    trace_id: str  # 32 hex digits, the first 8 the start's epoch seconds (X-Ray accepts it)
    span_id: str  # 16 hex digits
    parent_span_id: str | None = None


class RunHead(Record, kw_only=True):
    """The small, bounded record of a run: everything but its messages and events."""

    run_id: str
    agent: str
    session_id: str
    run_key: str  # orders runs within a session: "{created_ms:013d}-{run_id}"
    status: Status = "running"
    version: int = 0
    turn: int = 0  # steps started (model calls that began a turn)
    answers: int = 0  # persisted model answers (the scripted provider's index)
    msg_seq: int = 0  # next message number
    event_seq: int = 0  # next event number
    usage: Usage = msgspec.field(default_factory=Usage)
    model_used: str | None = None
    spec_hash: str
    agent_hash: str
    created_at: float
    updated_at: float
    expires_at: int
    lease_owner: str | None = None
    lease_until: float = 0.0
    started_calls: list[str] = msgspec.field(default_factory=list)  # at_most_once calls begun
    continuations: int = 0  # in the current answer (token-limit cuts)
    truncated: bool = False  # the final answer was still cut off after every continuation
    corrections: int = 0  # output-schema retries
    clarification: Clarification | None = None
    pending_approval: list[PendingApproval] = msgspec.field(default_factory=list)
    decisions: dict[str, ApprovalDecision] = msgspec.field(default_factory=dict)
    hook_decisions: dict[str, HookProgress] = msgspec.field(default_factory=dict)  # hooks.py
    task_token: str | None = None  # of the wait state that waits for this run, until used
    generation: int = 0  # the run's current Step Functions execution: 0 is named run_id
    sweep_after: float = 0.0  # when the sweeper should look at a non-terminal run (items.py)
    sweeps: int = 0  # times the sweeper had to restart this run's execution
    cancelled_by: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    input_preview: str = ""
    result: Any = None  # the final result when small; else in the blob store at result_ref
    result_ref: str | None = None
    parent_run_id: str | None = None
    parent_call_id: str | None = None  # the parent's ask_<agent> call this run answers
    warnings: list[str] = msgspec.field(default_factory=list)  # e.g. an MCP server was unreachable
    trigger: dict[str, str] | None = None  # what started it: {name, kind, event_id} (#28)
    # ---- teams (multi-agent) ----
    #: Handoffs in force: the entry agent, then each agent the conversation was transferred
    #: to. The last one is active; the one before it is its supervisor. Empty: `agent` alone.
    chain: list[str] = msgspec.field(default_factory=list)
    depth: int = 0  # delegations above this run (0 for a run the caller started)
    ancestors: list[str] = msgspec.field(default_factory=list)  # agents up the tree of asking runs
    children: list[ChildRun] = msgspec.field(default_factory=list)  # asked in the current step
    help_request: HelpRequest | None = None
    agent_path: list[str] = msgspec.field(default_factory=list)  # who handled the run, in order
    usage_by_agent: dict[str, Usage] = msgspec.field(default_factory=dict)
    turn_budget: int | None = None  # a child's share of its parent's max_turns
    max_turns: int | None = None  # the caller's limit for this run (under the agent's own)
    context: ContextState = msgspec.field(default_factory=ContextState)
    # ---- cost and budgets ----
    cost_usd: float = 0.0  # the whole team's, children and summaries included
    cost_by_model: dict[str, float] = msgspec.field(default_factory=dict)
    cost_by_agent: dict[str, float] = msgspec.field(default_factory=dict)
    session_spent: Spend = msgspec.field(
        default_factory=Spend
    )  # earlier runs', when this one began
    budget_left: Spend | None = None  # a child's: what its parent's budget had left for it
    trace: TraceRef | None = None  # set at the start when deployment.telemetry is on
    # ---- workflows ----
    workflow_run_id: str | None = None  # the workflow run this run is a step of
    workflow_token: str | None = None  # of the workflow's task that waits for this run
    # ---- the store's own ----
    sweep_indexed: str = ""  # the run's `sweep` index entry as written (runtime.store.items)

    @property
    def spent(self) -> Spend:
        return Spend(
            tokens=self.usage.input_tokens + self.usage.output_tokens, cost_usd=self.cost_usd
        )

    @property
    def active_agent(self) -> str:
        return self.chain[-1] if self.chain else self.agent

    @property
    def supervisor(self) -> str | None:
        return self.chain[-2] if len(self.chain) >= 2 else None

    @property
    def delegation_depth(self) -> int:
        """Delegations from the caller to the active agent (handoffs and asks)."""
        return self.depth + max(0, len(self.chain) - 1)


def new_head(**values: Any) -> RunHead:
    """A run's first head, validated: what it starts with comes from outside (a request, a
    trigger, a workflow step, a parent's call), and what is wrong is said here (an
    InvalidRequest naming the field), not stored. Coerced as pydantic's lax mode did
    (`created_at` from a whole-second clock is a float, as stored)."""
    try:
        return load(RunHead, values, strict=False)
    except msgspec.ValidationError as exc:
        field = str(exc).rpartition("$.")[2].rstrip("`") or None
        raise InvalidRequest(f"invalid run: {exc}", field=field) from None


@dataclass
class Commit:
    """One atomic change: the new head and the items it adds."""

    head: RunHead  # with version already incremented
    expected_version: int | None  # None: create the run (head must not exist)
    messages: list[tuple[int, Message]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


class BlobStore(Protocol):
    """Large bodies and full tool outputs (S3 in AWS)."""

    def put(self, key: str, body: bytes, content_type: str = "application/json") -> None: ...

    def get(self, key: str) -> bytes: ...

    def list(self, prefix: str, limit: int = 100) -> list[tuple[str, int]]:
        """(key, size) of objects under `prefix`, in key order."""
        ...

    def delete_prefix(self, prefix: str) -> int:
        """Delete every object under `prefix`; how many there were."""
        ...

    def presign(self, key: str, seconds: int) -> str:
        """A URL that downloads the object for `seconds`, without credentials."""
        ...


class RunStore(Protocol):
    """Durable run state. Implementations: MemoryStore (tests, benchmarks), DynamoStore."""

    blobs: BlobStore

    def commit(self, commit: Commit) -> None:
        """Apply atomically; raise StateConflict when the version (or absence) check fails."""
        ...

    def load_head(self, run_id: str) -> RunHead:
        """Raise RunNotFound when there is no such run."""
        ...

    def load_messages(self, head: RunHead, start: int = 0) -> list[Message]:
        """The run's own messages from number `start` on, in order (one paginated query
        that reads nothing before `start`: a compacted run loads from its summary)."""
        ...

    def load_run(self, run_id: str) -> tuple[RunHead, list[Message]]:
        """The head and all its messages in one read of the run's records (what a result
        shows): load_head then load_messages would read the newest record twice."""
        ...

    def session_history(self, head: RunHead, limit: int) -> list[Message]:
        """What the run sees of its session: the last `limit` messages of the session's
        earlier succeeded runs, oldest first, as later runs see them (messages.as_earlier),
        cut at a user input so a tool call is never separated from its result.

        Reads newest first and stops once it has enough: the cost follows `limit`, not the
        session's length, and shortened tool outputs are read without their S3 bodies."""
        ...

    def list_events(self, run_id: str, after: int = -1, limit: int = 100) -> list[Event]:
        """At most `limit` events after number `after` (reads no more than it returns)."""
        ...

    def session_state(self, agent: str, session_id: str) -> SessionState:
        """Who had the session's conversation when its last run ended (its handoff chain;
        empty: the agent itself, or a new session) and what its finished runs spent."""
        ...

    def latest_session_run(self, agent: str, session_id: str) -> str | None:
        """The id of the session's newest run (any status), or None for a new session."""
        ...

    def session_runs(self, agent: str, session_id: str) -> list[str]:
        """Ids of the session's runs, oldest first."""
        ...

    def delete_session(self, agent: str, session_id: str) -> list[str]:
        """Delete the session: its items, its runs' items and their objects (bodies,
        results, the tool-output cache). Returns the ids of the runs it held."""
        ...

    def due_runs(self, now: float, limit: int = 500) -> list[str]:
        """Ids of unfinished runs whose `sweep_after` has passed (the sweeper's work list),
        from the sparse `sweep` index: finished runs are not in it."""
        ...

    def save_workflow_run(self, run: Any, expected_version: int | None) -> None:
        """Write a workflow run (runtime.workflows): new when `expected_version` is None,
        else only over that version (StateConflict otherwise)."""
        ...

    def load_workflow_run(self, workflow_run_id: str) -> str:
        """A workflow run's stored JSON; RunNotFound when there is none."""
        ...
