"""What `agentfn eval` shows and writes: the table, JUnit XML for CI, and a self-contained
report (Markdown, or HTML when the file ends in .html) with each case's trajectory, its
checks and the diff of what was expected against what happened."""

from __future__ import annotations

import difflib
import html
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from infra.evals.runner import Attempt, CaseResult


def _label(result: CaseResult) -> str:
    return f"{Path(result.file).name}::{result.case.name}"


def verdict(result: CaseResult) -> str:
    word = "PASS" if result.passed else "FAIL"
    if any(a.error for a in result.attempts) and not result.passed:
        word = "ERROR"
    runs = len(result.attempts)
    if runs > 1 or result.case.pass_ratio < 1:
        word += f" {result.passes}/{runs} (need {result.case.pass_ratio:.0%})"
    return word


def reasons(result: CaseResult) -> list[str]:
    """One line per failed assertion (named by its key path) or error; empty when passed."""
    if result.passed:
        return []
    lines = [f"error: {a.error}" for a in result.attempts if a.error][:1]
    lines += [f"{check.name}: {check.why}" for check in result.failing]
    return lines


def table(results: list[CaseResult]) -> str:
    """case · result · what failed and why · tokens · cost · duration."""
    rows = [("CASE", "RESULT", "WHY", "TOKENS", "COST", "TIME")]
    for result in results:
        why = reasons(result) or [""]
        rows.append(
            (
                _label(result),
                verdict(result),
                _cut(why[0], 110),
                f"{result.tokens:,}",
                f"${result.cost_usd:.4f}",
                f"{result.seconds:.1f}s",
            )
        )
        rows += [("", "", _cut(line, 110), "", "", "") for line in why[1:]]
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows
    ]
    failed = sum(1 for r in results if not r.passed)
    lines.append(f"{len(results) - failed} passed, {failed} failed")
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def junit(results: list[CaseResult]) -> str:
    """One <testsuite> per eval file, one <testcase> per case; a failure's message names
    the failed assertions, its text says why each failed."""
    root = ET.Element("testsuites", name="agentfn eval")
    by_file: dict[str, list[CaseResult]] = {}
    for result in results:
        by_file.setdefault(result.file, []).append(result)
    for file, members in by_file.items():
        suite = ET.SubElement(
            root,
            "testsuite",
            name=file,
            tests=str(len(members)),
            failures=str(sum(1 for r in members if not r.passed and not _errored(r))),
            errors=str(sum(1 for r in members if _errored(r))),
            time=f"{sum(r.seconds for r in members):.3f}",
        )
        for result in members:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=Path(file).stem,
                name=result.case.name,
                time=f"{result.seconds:.3f}",
            )
            if not result.passed:
                kind = "error" if _errored(result) else "failure"
                names = [c.name for c in result.failing] or ["error"]
                element = ET.SubElement(case, kind, message="; ".join(names), type=verdict(result))
                element.text = "\n".join(reasons(result))
            out = _judged(result)
            if out:
                ET.SubElement(case, "system-out").text = out
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _errored(result: CaseResult) -> bool:
    return not result.passed and all(a.error for a in result.attempts)


def _judged(result: CaseResult) -> str:
    return "\n".join(
        f"judge {a.judge['model']}: grade {a.judge['grade']:g} (threshold "
        f"{a.judge['threshold']:g}): {a.judge.get('reasoning', '')}"
        for a in result.attempts
        if a.judge and "grade" in a.judge
    )


# -- the report ----------------------------------------------------------------------------


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def diff(expected: Any, actual: Any) -> str:
    lines = difflib.unified_diff(
        _json(expected).splitlines(), _json(actual).splitlines(), "expected", "actual", lineterm=""
    )
    return "\n".join(lines)


def _attempt_blocks(index: int, attempt: Attempt, total: int) -> list[tuple[str, str]]:
    """(kind, text) blocks: h4, p, code, list, table rows."""
    blocks: list[tuple[str, str]] = []
    if total > 1:
        blocks.append(("h4", f"Attempt {index + 1}: {'passed' if attempt.passed else 'failed'}"))
    if attempt.error:
        blocks.append(("p", f"Could not run: {attempt.error}"))
        return blocks
    outcome = attempt.outcome
    blocks.append(
        (
            "p",
            f"Status {outcome.status}"
            + (f" ({outcome.error_code}: {outcome.error_message})" if outcome.error_code else "")
            + f" · {outcome.turns} turns · {outcome.tokens:,} tokens · ${outcome.cost_usd:.4f}"
            + (f" · handoffs: {', '.join(outcome.handoffs)}" if outcome.handoffs else "")
            + (
                f" · approval asked for: {', '.join(outcome.approvals_asked)}"
                if outcome.approvals_asked
                else ""
            ),
        )
    )
    trajectory = [
        f"{'✓' if c.success else '✗'} {c.agent} → {c.tool} {json.dumps(c.args, ensure_ascii=False)}"
        for c in outcome.trajectory
    ]
    blocks.append(("p", "Trajectory:"))
    blocks.append(("list", "\n".join(trajectory) or "(no tool calls)"))
    blocks.append(("p", "Answer:"))
    blocks.append(("code", _json(outcome.result) if outcome.result is not None else "(none)"))
    if attempt.judge:
        judged = attempt.judge
        grade = f"{judged['grade']:g}" if "grade" in judged else "none"
        blocks.append(
            (
                "p",
                f"Judge {judged['model']}: grade {grade} (threshold {judged['threshold']:g}). "
                f"Reasoning: {judged.get('reasoning') or judged.get('error', '')}",
            )
        )
    rows = [("assertion", "result", "why")]
    rows += [(c.name, "pass" if c.ok else "FAIL", c.why) for c in attempt.checks]
    blocks.append(("table", json.dumps(rows)))
    for check in attempt.checks:
        if not check.ok and (check.expected is not None or check.actual is not None):
            blocks.append(("p", f"{check.name}: expected vs actual"))
            blocks.append(("code", diff(check.expected, check.actual)))
    return blocks


def _case_blocks(result: CaseResult) -> list[tuple[str, str]]:
    case = result.case
    blocks: list[tuple[str, str]] = [("h3", f"{_label(result)} — {verdict(result)}")]
    what = f"{'agent' if case.agent else 'workflow'} {case.target}"
    if result.cassette:
        what += f" · cassette {result.cassette}"
    blocks.append(("p", what))
    blocks.append(("code", "\n".join(f"user: {m}" for m in case.messages)))
    for index, attempt in enumerate(result.attempts):
        blocks += _attempt_blocks(index, attempt, len(result.attempts))
    return blocks


def markdown(results: list[CaseResult]) -> str:
    failed = sum(1 for r in results if not r.passed)
    out = [f"# agentfn eval: {len(results) - failed} passed, {failed} failed", ""]
    out += ["| case | result | why | tokens | cost | time |", "|---|---|---|---|---|---|"]
    for r in results:
        why = "<br>".join(reasons(r)).replace("|", "\\|")
        out.append(
            f"| {_label(r)} | {verdict(r)} | {why} | {r.tokens:,} | ${r.cost_usd:.4f} "
            f"| {r.seconds:.1f}s |"
        )
    for result in results:
        out.append("")
        for kind, text in _case_blocks(result):
            if kind in {"h3", "h4"}:
                out += ["#" * int(kind[1]) + " " + text, ""]
            elif kind == "p":
                out += [text, ""]
            elif kind == "code":
                out += ["```", text, "```", ""]
            elif kind == "list":
                out += [f"{i}. {line}" for i, line in enumerate(text.splitlines(), 1)] + [""]
            else:
                rows = json.loads(text)
                out += [f"| {' | '.join(rows[0])} |", "|---|---|---|"]
                out += [f"| {' | '.join(c.replace('|', '/') for c in r)} |" for r in rows[1:]]
                out.append("")
    return "\n".join(out)


_CSS = (
    "body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
    "pre{background:#f6f6f6;padding:8px;overflow:auto}.FAIL,.ERROR{color:#b00}.PASS{color:#070}"
)


def html_report(results: list[CaseResult]) -> str:
    e = html.escape
    failed = sum(1 for r in results if not r.passed)
    title = f"agentfn eval: {len(results) - failed} passed, {failed} failed"
    out = [f"<!doctype html><meta charset=utf-8><title>{e(title)}</title><style>{_CSS}</style>"]
    out.append(f"<h1>{e(title)}</h1><table><tr><th>case<th>result<th>why<th>tokens<th>cost<th>time")
    for r in results:
        word = verdict(r).split()[0]
        out.append(
            f"<tr><td>{e(_label(r))}<td class={word}>{e(verdict(r))}"
            f"<td>{'<br>'.join(e(x) for x in reasons(r))}<td>{r.tokens:,}"
            f"<td>${r.cost_usd:.4f}<td>{r.seconds:.1f}s"
        )
    out.append("</table>")
    for result in results:
        for kind, text in _case_blocks(result):
            if kind in {"h3", "h4"}:
                out.append(f"<{kind}>{e(text)}</{kind}>")
            elif kind == "p":
                out.append(f"<p>{e(text)}</p>")
            elif kind == "code":
                out.append(f"<pre>{e(text)}</pre>")
            elif kind == "list":
                out.append("<ol>" + "".join(f"<li>{e(x)}" for x in text.splitlines()) + "</ol>")
            else:
                rows = json.loads(text)
                cells = "".join(
                    "<tr>" + "".join(f"<td class={e(c)}>{e(c)}" for c in row) for row in rows[1:]
                )
                out.append("<table><tr><th>assertion<th>result<th>why" + cells + "</table>")
    return "\n".join(out) + "\n"


def write_report(path: Path, results: list[CaseResult]) -> None:
    text = html_report(results) if path.suffix in {".html", ".htm"} else markdown(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
