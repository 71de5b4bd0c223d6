"""How a run's events read on a terminal, as they are committed: `agentfn run` prints its
run's (infra.cli.run_cli), `agentfn dev` every run it serves (infra.local.dev_server), and
`agentfn events` a stored run's (infra.cli.api_views).

Here, below both the CLI and the dev server, so neither imports the other for it.
"""

from __future__ import annotations

import json
import threading
from typing import Any, TextIO

from runtime.events import Event


class Progress:
    """Renders events as they are committed. A team's runs nest: a child run (an agent asked
    as a tool) is indented under the run that asked it; handoffs and escalations say who
    has the conversation now."""

    def __init__(
        self,
        stream: TextIO,
        enabled: bool,
        *,
        tag_runs: bool = False,
        live: TextIO | None = None,
    ):
        self.stream = stream
        self.enabled = enabled
        self.tag_runs = tag_runs  # many runs at once (`agentfn dev`): start lines with the run
        self.live = live  # where the caller's run's answer streams (a terminal), if anywhere
        self._depth: dict[str, int] = {}
        self.run_id: str | None = None  # the first run started (the caller's): --trace
        self._writing: tuple[int, str, int] | None = None  # (turn, model, attempt) streaming
        self._streamed: dict[int, str] = {}  # turn → its text as streamed
        self._lock = threading.Lock()

    def chunk(self, chunk: dict[str, Any]) -> None:
        """A text delta of the caller's run (runtime.live.live), written where it streams; a new
        attempt of the same turn (a retry, a fallback) starts the text over on a new line."""
        if not self.enabled or self.live is None or chunk["run_id"] != self.run_id:
            return
        key = (chunk["turn"], chunk["model"], chunk["attempt"])
        with self._lock:
            if self._writing is not None and self._writing != key:
                self.live.write(f"\n↻ {chunk['model']} again:\n")
                self._streamed.pop(chunk["turn"], None)
            self._writing = key
            self._streamed[chunk["turn"]] = self._streamed.get(chunk["turn"], "") + chunk["text"]
            self.live.write(chunk["text"])
            self.live.flush()

    def streamed(self, result: Any) -> bool:
        """Whether the result already reached the terminal as it streamed (a structured
        result: as the JSON text the model wrote)."""
        if isinstance(result, str):
            return bool(result) and result in self._streamed.values()
        for text in self._streamed.values():
            try:
                if result is not None and json.loads(text) == result:
                    return True
            except ValueError:
                continue
        return False

    def __call__(self, event: Event) -> None:
        if self.run_id is None and event.type == "run_started":
            self.run_id = event.run_id
        if not self.enabled:
            return
        with self._lock:
            if self._writing is not None and self.live is not None:
                self.live.write("\n")  # the streamed text ends; progress goes on below it
                self.live.flush()
                self._writing = None
        line = self.line(event)
        if line is not None:
            indent = "  " * self._depth.get(event.run_id, 0) * 2
            if self.tag_runs:
                indent = f"…{event.run_id[-6:]} {indent}"
            print(indent + line.replace("\n", "\n" + indent), file=self.stream, flush=True)

    def line(self, event: Event) -> str | None:
        d = event.data
        if event.type == "run_started":
            if d.get("parent_run_id"):
                return f"▶ {d['agent']} · asked by its supervisor · run {event.run_id[:12]}"
            return f"▶ {d['agent']} · session {d['session_id'][:12]}"
        if event.type == "model_response":
            usage = d.get("usage", {})
            tokens = f"{usage.get('input_tokens', 0)}→{usage.get('output_tokens', 0)} tokens"
            head = f"  step {d['turn']} · {d['model']} · {tokens}"
            if d.get("stop_reason") == "max_tokens":
                head += " · cut off at the token limit"
            text = (d.get("text") or "").strip()
            if event.run_id == self.run_id and d["turn"] in self._streamed:
                text = ""  # it was on the terminal as it streamed
            if text and d.get("tool_calls"):
                head += "\n    " + text.replace("\n", "\n    ")
            return head
        if event.type == "tools_unavailable":
            return (
                f"  ⚠ MCP server {d['server']} is unavailable; the run goes on without its "
                f"tools: {d['error']}"
            )
        if event.type == "tool_result":
            mark = "✓" if d["success"] else "✗"
            detail = "" if d["success"] else f" · {d['output'][:160]}"
            return f"    {mark} {d['tool_name']} · {d['duration_ms']} ms{detail}"
        if event.type == "context_compacted":
            return _compaction_line(d)
        return self._team_line(event) or self._person_line(event) or self._end_line(event)

    def _team_line(self, event: Event) -> str | None:
        d = event.data
        if event.type == "handoff":
            return f"  ⇢ {d['to']} takes the conversation over · {d.get('reason') or ''}".rstrip(
                " ·"
            )
        if event.type == "escalation":
            return f"  ⇠ {d['from']} asks {d['to']} for help · {d.get('reason') or ''}".rstrip(" ·")
        if event.type == "intent_matched":
            return f"  ⚡ intent · {d['intent']} → {d['then']}"
        if event.type == "child_run_started":
            self._depth[d["run_id"]] = self._depth.get(event.run_id, 0) + 1
            return f"    ↳ asking {d['agent']}"
        if event.type == "child_run_finished":
            mark = "✓" if d["status"] == "succeeded" else "✗"
            return f"    {mark} ask_{d['agent']} · {d['status']}"
        return None

    def _person_line(self, event: Event) -> str | None:
        d = event.data
        if event.type == "clarification_requested":
            return f"  ? {d['question']}"
        if event.type == "clarification_answered":
            return "  ↳ answered"
        if event.type == "approval_requested":
            calls = ", ".join(c["tool_name"] for c in d["calls"])
            return f"  ⏸ waiting for approval: {calls}"
        if event.type == "approval_decided":
            verdict = "timed out" if d["timed_out"] else "approved" if d["approved"] else "rejected"
            return f"  ↳ {verdict}" + (f" ({d['reason']})" if d.get("reason") else "")
        return None

    def _end_line(self, event: Event) -> str | None:
        d = event.data
        if event.type == "hook_decision" and (d["decision"] != "allow" or d.get("error")):
            what = f" {d['tool_name']}" if d.get("tool_name") else ""
            why = d.get("error") or d.get("reason")
            line = f"    ⚑ {d['event']}{what}: {d['decision']} ({d['type']} hook {d['hook']})"
            return line + (f" · {why}" if why else "")
        if event.type == "run_completed":
            tokens = f"{d['tokens_input']} in / {d['tokens_output']} out tokens"
            cost = f" · ${d['cost_usd']:.4f}" if d.get("cost_usd") else ""
            return f"✓ succeeded in {d['turns_used']} turns · {tokens}{cost}"
        if event.type == "run_failed":
            return f"✗ {d['error_code']}: {d['error_message']}"
        return None


def _compaction_line(d: dict[str, Any]) -> str:
    done = [f"{d['pruned']} outputs set aside"] if d.get("pruned") else []
    if d.get("summarised"):
        done.append(f"{d['summarised']} messages summarised by {d['summary_model']}")
    line = f"  ⇣ context compacted · {d['before']:,} → {d['after']:,} tokens"
    line += f" · {', '.join(done)}" if done else ""
    return line + ("" if d.get("ok") else f" · not enough: {d.get('error') or 'still too long'}")
