"""What `agentfn run` shows and asks when a run stops for a person's approval.

Each pending call is shown whole (tool, arguments, the approval rule that gated it) before
anyone decides. Deciding in advance stays possible but explicit: `--approve TOOL` decides
only the calls of that tool (repeatable); a bare `--approve` (or `--deny`) decides every
pending call and says exactly which ones it decided. What is left undecided waits, and the
exit-3 message says how to decide it later from another process (`agentfn approve RUN_ID`),
which works because `agentfn run` keeps its state on disk (infra.local.local_state).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from typing import Any

from runtime.spec import AgentfnSpec

#: `--approve` without a tool name: every pending call.
EVERY_CALL = "*"


def rule_text(spec: AgentfnSpec, agent: str, tool_name: str) -> str:
    """The agent's approval rule that gates `tool_name`, as the spec wrote it."""
    agent_spec = spec.agents.get(agent)
    rules = agent_spec.approval if agent_spec is not None else []
    for index, rule in enumerate(rules):
        if rule.tools is None and not rule.destructive and not rule.open_world:
            return _describe_rule(spec, agent, index, "every tool")
        for pattern in rule.tools or []:
            short = pattern.rpartition(":")[2].rpartition("/")[2]
            if fnmatch.fnmatchcase(tool_name, pattern) or fnmatch.fnmatchcase(tool_name, short):
                return _describe_rule(spec, agent, index, f"tools {rule.tools}")
        if rule.destructive:
            return _describe_rule(spec, agent, index, "destructive tools")
    return "an approval rule"


def _describe_rule(spec: AgentfnSpec, agent: str, index: int, what: str) -> str:
    rule = spec.agents[agent].approval[index]
    timeout = rule.timeout or spec.defaults.approval_timeout
    return (
        f"{agent}.approval[{index}] ({what}; may {'/'.join(rule.decisions)}; "
        f"times out after {timeout:g} s)"
    )


def undecided(head: Any) -> list[Any]:
    """The pending calls no one has decided yet (a run waits until every one is)."""
    return [p for p in head.pending_approval if p.tool_call_id not in head.decisions]


def pending_lines(spec: AgentfnSpec, head: Any) -> list[str]:
    """Each undecided call of a waiting run: tool, arguments, rule, tool call id."""
    lines = [f"⏸ run {head.run_id} ({head.active_agent}) waits for approval:"]
    for pending in undecided(head):
        arguments = json.dumps(pending.inputs, indent=2, ensure_ascii=False)
        lines.append(f"  • {pending.tool_name}  (tool call {pending.tool_call_id})")
        lines.append("    arguments: " + arguments.replace("\n", "\n    "))
        lines.append(f"    rule: {rule_text(spec, head.active_agent, pending.tool_name)}")
    return lines


def decide_later(run_id: str, offline: bool) -> str:
    """The exit-3 advice: how to decide from another command."""
    if offline:
        return (
            "--offline keeps nothing once it exits: run the same command with --approve [TOOL] "
            "or --deny [--reason …] (or in a terminal to be asked)."
        )
    return (
        f"Decide later (this run is kept in the local state): agentfn approve {run_id} "
        "[--tool-call-id ID] [--edit JSON] [--deny] [--reason …]; "
        f"agentfn status {run_id} shows it."
    )


def wanted(args: argparse.Namespace) -> list[str]:
    """The tool names `--approve` names (EVERY_CALL for a bare `--approve`)."""
    return list(getattr(args, "approve", None) or [])


def decide_from_flags(engine: Any, head: Any, args: argparse.Namespace) -> list[str]:
    """Decide the pending calls the flags name; the lines saying what was decided."""
    names = wanted(args)
    said: list[str] = []
    for pending in undecided(head):
        if args.deny:
            approved = False
        elif EVERY_CALL in names or pending.tool_name in names:
            approved = True
        else:
            continue
        engine.decide(
            head.run_id,
            approved=approved,
            tool_call_id=pending.tool_call_id,
            reason=args.reason,
            by="cli",
        )
        inputs = json.dumps(pending.inputs, ensure_ascii=False)
        verb = "approved" if approved else "denied"
        said.append(f"  {verb} by flag: {pending.tool_name} {inputs} ({pending.tool_call_id})")
    return said


def ask(engine: Any, spec: AgentfnSpec, head: Any) -> bool:
    """On a terminal: show every pending call, then ask for each. False: stdin closed."""
    print("\n".join(pending_lines(spec, head)), file=sys.stderr, flush=True)
    for pending in undecided(head):
        try:
            answer = input(f"Approve {pending.tool_name}? [y/N] ").strip().lower()
        except EOFError:
            return False
        engine.decide(
            head.run_id,
            approved=answer in {"y", "yes"},
            tool_call_id=pending.tool_call_id,
            by="cli",
        )
    return True


def decide(engine: Any, spec: AgentfnSpec, head: Any, args: argparse.Namespace) -> bool:
    """Decide from the flags, then (on a terminal) by asking about the rest. False: some
    calls are left for later."""
    said = decide_from_flags(engine, head, args)
    if said and not getattr(args, "json", False):
        print("\n".join(said), file=sys.stderr, flush=True)
    if said:
        head = engine.store.load_head(head.run_id)
        if head.status != "awaiting_approval":
            return True
    if not sys.stdin.isatty():
        return False
    return ask(engine, spec, head)
