"""Is a regular expression safe to run on text a model (or anyone) chose? Python's `re`
backtracks: when a pattern can match the same text in more than one way *inside a loop*,
a failing match tries every combination, which doubles with each character (`(a+)+$` on
forty `a`s and a `b` runs for minutes). JSON Schema `pattern`s of tool inputs and outputs
run on such text, so agentfn refuses those patterns instead of running them.

The check is the textbook one for exponential backtracking (Weber & Seidl's criterion for
exponential ambiguity, as used by ReDoS detectors such as RXXR and Weideman's): build the
matcher's automaton with its loops as written (Thompson's construction, so `(a+)+` keeps
its two nested loops), then look for a state from which two different paths read the same
text and return to it. Those are found as a strongly connected component of the
automaton-times-itself that holds a state paired with itself and either a pair of different
states or a step the automaton can take in two ways. This catches `(a+)+`, `(a|a)*`,
`(\\w+\\s?)*` and `(\\s*,\\s*)*`, yet accepts the safe loops patterns are made of, such as
`^\\d+(\\.\\d+)*$` and `^[a-z0-9]+(-[a-z0-9]+)*$`, where a separator decides where each
round ends. Character sets are compared conservatively: when their overlap is not certain
they are taken to overlap, so a doubtful pattern is refused, never trusted.

A loop whose body can match the empty text (`(a*)*`, `(a?)+`) is refused as well. Patterns
too large to analyse within fixed bounds are refused with a message saying so.

Polynomial backtracking (`\\d*\\d*\\d*x`) is not exponential and is not reported.
Standard library only: this module ships in the Lambda.
"""

from __future__ import annotations

import re
import warnings

from runtime.safety.regex_charsets import overlap, single
from runtime.safety.regex_parse import (
    Alt,
    Char,
    CharSet,
    Look,
    Node,
    RegexUnsupported,
    Repeat,
    Seq,
    parse,
)

MAX_POSITIONS = 2_000  # characters the automaton reads, after unrolling counted repeats
MAX_LENGTH = 1_000  # characters of a pattern
MAX_WORK = 100_000  # steps of the analysis of one pattern (well under 0.1 s)
_MAX_COPIES = 32  # `x{n}` is unrolled up to this many copies, beyond it read as `x{32,}`
_MAX_OPTIONAL = 16  # `x{m,n}` keeps n - m optional copies up to this, beyond it `x{m,}`

EXAMPLES = "(a+)+, (a|a)* or (\\w+\\s?)*"


class Budget:
    """Steps the analysis may still take. One budget may be shared by all the patterns of a
    spec, so a file full of hard patterns is refused in bounded time, not analysed for
    minutes; each pattern is also held to MAX_WORK on its own."""

    def __init__(self, steps: int = MAX_WORK):
        self.left = steps

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise RegexUnsupported(
                "it is too complex to analyse within agentfn's limits; simplify it (a long "
                "list of fixed values is better written as an `enum`)"
            )


def regex_problem(pattern: str, budget: Budget | None = None) -> str | None:
    """Why `pattern` must not be run on untrusted text, or None when it is safe."""
    if len(pattern) > MAX_LENGTH:
        return f"pattern of {len(pattern):,} characters is longer than {MAX_LENGTH:,}; shorten it"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # FutureWarning on `[[`: not our concern here
            re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as exc:
        return f"pattern {pattern!r} is not a valid regular expression: {exc}"
    shared = budget or Budget()
    own = Budget(min(MAX_WORK, shared.left))
    try:
        parsed = parse(pattern)
        automata = _Builder(pattern, parsed.ignorecase, own)
        automata.analyse(parsed.root)
        while automata.lookarounds:  # each lookaround body is matched on its own, too
            automata.analyse(automata.lookarounds.pop())
    except RegexUnsupported as exc:
        return f"pattern {pattern!r} cannot be checked for catastrophic backtracking: {exc}"
    except _Unsafe as exc:
        return f"pattern {pattern!r} {exc}"
    finally:
        shared.left -= min(MAX_WORK, shared.left) - own.left
    return None


class _Unsafe(Exception):
    pass


class _Builder:
    """Thompson's automaton of one pattern: ε-steps between nodes, and `edges`, each reading
    one character of a set; `loops[k]` is the outermost repeating part around edge k."""

    def __init__(self, pattern: str, ignorecase: bool, budget: Budget):
        self.pattern = pattern
        self.ignorecase = ignorecase
        self.budget = budget
        self.lookarounds: list[Node] = []

    def analyse(self, root: Node) -> None:
        self.eps: list[list[int]] = []
        self.edges: list[tuple[int, CharSet, int]] = []
        self.loops: list[tuple[int, int] | None] = []
        start, _ = self.build(root, None)
        _find_ambiguity(self, start)

    def node(self) -> int:
        self.eps.append([])
        return len(self.eps) - 1

    def link(self, source: int, target: int) -> None:
        self.eps[source].append(target)

    def build(self, node: Node, loop: tuple[int, int] | None) -> tuple[int, int]:
        if isinstance(node, Char):
            start, end = self.node(), self.node()
            self.edges.append((start, node.chars, end))
            self.loops.append(loop)
            if len(self.edges) > MAX_POSITIONS:
                raise RegexUnsupported(
                    f"it is too large to analyse (over {MAX_POSITIONS} characters once counted "
                    "repetitions are unrolled); simplify it"
                )
            return start, end
        if isinstance(node, Seq):
            start = end = self.node()
            for item in node.items:
                first, last = self.build(item, loop)
                self.link(end, first)
                end = last
            return start, end
        if isinstance(node, Alt):
            start, end = self.node(), self.node()
            for branch in node.branches:
                first, last = self.build(branch, loop)
                self.link(start, first)
                self.link(last, end)
            return start, end
        if isinstance(node, Repeat):
            return self.repeat(node, loop)
        if isinstance(node, Look):
            self.lookarounds.append(node.body)
        state = self.node()
        return state, state  # Empty, Look: no character

    def repeat(self, node: Repeat, loop: tuple[int, int] | None) -> tuple[int, int]:
        low, high = node.low, node.high
        if low > _MAX_COPIES or (high is not None and high - low > _MAX_OPTIONAL):
            low, high = min(low, _MAX_COPIES), None  # reads more texts, never fewer paths
        if high is None:  # a loop (bounded repeats are unrolled: they hold no cycle)
            if _nullable(node.body):
                raise _Unsafe(
                    f"can backtrack catastrophically: {self.fragment(node.span)!r} repeats a "
                    "part that can match the empty text (as in (a*)*); make the repeated part "
                    "match at least one character"
                )
            loop = loop or node.span
        start = end = self.node()
        for _ in range(low - 1 if high is None and low > 0 else low):
            first, last = self.build(node.body, loop)
            self.link(end, first)
            end = last
        if high is None:  # a loop: `x*`, or the last mandatory copy of `x+` loops back
            back, done = self.node(), self.node()
            first, last = self.build(node.body, loop)
            self.link(end, back)
            self.link(back, first)
            self.link(last, back) if low == 0 else self.link(last, first)
            self.link(back if low == 0 else last, done)
            return start, done
        for _ in range(high - low):  # nested optional copies: x{0,2} is (x(x)?)?
            first, last = self.build(node.body, loop)
            done = self.node()
            self.link(end, first)
            self.link(end, done)
            self.link(last, done)
            end = done
        return start, end

    def fragment(self, span: tuple[int, int]) -> str:
        return self.pattern[span[0] : span[1]] or self.pattern


def _nullable(node: Node) -> bool:
    if isinstance(node, Char):
        return False
    if isinstance(node, Seq):
        return all(_nullable(item) for item in node.items)
    if isinstance(node, Alt):
        return any(_nullable(branch) for branch in node.branches)
    if isinstance(node, Repeat):
        return node.low == 0 or _nullable(node.body)
    return True


def _find_ambiguity(automaton: _Builder, start: int) -> None:
    """Raise _Unsafe when two different paths read the same text around one loop."""
    steps = _steps(automaton)
    edges, fold = automaton.edges, automaton.ignorecase
    literal = [None if fold else single(chars) for _, chars, _ in edges]
    # Product states are unordered pairs of edges (the characters last read); -1 is the
    # start. succ[(a, b)] lists (next pair, taken in two ways by one path).
    initial = (-1, -1)
    succ: dict[tuple[int, int], list[tuple[tuple[int, int], bool]]] = {}
    todo = [initial]
    indexes: dict[int, tuple[dict[int, list[int]], list[int]]] = {}
    while todo:
        a, b = pair = todo.pop()
        if pair in succ:
            continue
        after_a = steps[start if a < 0 else edges[a][2]]
        node_b = start if b < 0 else edges[b][2]
        if node_b not in indexes:
            indexes[node_b] = _by_literal(steps[node_b], literal)
        by_code, others = indexes[node_b]
        out: list[tuple[tuple[int, int], bool]] = []
        for j, ways_j in after_a.items():
            code = literal[j]
            candidates = [*by_code.get(code, ()), *others] if code is not None else steps[node_b]
            automaton.budget.spend(len(candidates))
            for k in candidates:
                if (a != b or j <= k) and (
                    (code is not None and code == literal[k])
                    or overlap(edges[j][1], edges[k][1], fold)
                ):
                    following = (j, k) if j <= k else (k, j)
                    out.append((following, a == b and j == k and ways_j > 1))
                    if following not in succ:
                        todo.append(following)
        succ[pair] = out
    for component in _components(succ):
        members = set(component)
        diagonal = [p for p in component if p[0] == p[1] and p[0] >= 0]
        if not diagonal:
            continue
        twice = any(
            double and following in members
            for pair in component
            for following, double in succ[pair]
        )
        cyclic = len(component) > 1 or any(f == component[0] for f, _ in succ[component[0]])
        if cyclic and (twice or any(p[0] != p[1] for p in component)):
            span = automaton.loops[diagonal[0][0]]
            where = automaton.fragment(span) if span else automaton.pattern
            raise _Unsafe(
                f"can backtrack catastrophically: {where!r} can match the same text in more "
                f"than one way (nested or overlapping repetition, as in {EXAMPLES}); "
                "rewrite it so that each character can be matched only one way"
            )


def _by_literal(
    reachable: dict[int, int], literal: list[int | None]
) -> tuple[dict[int, list[int]], list[int]]:
    """Edges by the one character they read (to pair `a` with `a` without comparing it to
    every `b`), and the edges that read a set."""
    by_code: dict[int, list[int]] = {}
    others: list[int] = []
    for k in reachable:
        code = literal[k]
        if code is None:
            others.append(k)
        else:
            by_code.setdefault(code, []).append(k)
    return by_code, others


def _steps(automaton: _Builder) -> dict[int, dict[int, int]]:
    """For every node: the edges reachable by ε-steps alone, each with its number of
    distinct ε-paths (counted up to 2; more than one means a choice that reads nothing)."""
    starts: dict[int, list[int]] = {}
    for index, (source, _, _) in enumerate(automaton.edges):
        starts.setdefault(source, []).append(index)
    order: list[int] = []  # post-order of the ε-graph: successors before their sources
    seen: set[int] = set()
    for root in range(len(automaton.eps)):
        if root in seen:
            continue
        stack = [(root, iter(automaton.eps[root]))]
        seen.add(root)
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                order.append(node)
            elif child not in seen:
                seen.add(child)
                stack.append((child, iter(automaton.eps[child])))
    reach: dict[int, dict[int, int]] = {}
    for node in order:  # no ε-cycles: every loop body reads at least one character
        counts = dict.fromkeys(starts.get(node, ()), 1)
        for child in automaton.eps[node]:
            automaton.budget.spend(len(reach[child]))
            for edge, ways in reach[child].items():
                counts[edge] = min(2, counts.get(edge, 0) + ways)
        reach[node] = counts
    return reach


def _components(
    graph: dict[tuple[int, int], list[tuple[tuple[int, int], bool]]],
) -> list[list[tuple[int, int]]]:
    """Strongly connected components (Tarjan's algorithm, without recursion)."""
    index: dict[tuple[int, int], int] = {}
    low: dict[tuple[int, int], int] = {}
    on_stack: set[tuple[int, int]] = set()
    stack: list[tuple[int, int]] = []
    found: list[list[tuple[int, int]]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            children = graph[node]
            if position < len(children):
                work.append((node, position + 1))
                child = children[position][0]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            for child, _ in children:
                if child in on_stack:
                    low[node] = min(low[node], low[child])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(component)
    return found
