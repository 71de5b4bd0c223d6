"""runtime.safety.regex_safety: patterns that backtrack exponentially are refused, the loops real
schemas are made of are accepted, and the check itself is fast."""

from __future__ import annotations

import re
import time

import pytest

from runtime.safety.regex_safety import Budget, regex_problem

CATASTROPHIC = [
    r"(a+)+",
    r"^(a+)+$",
    r"(a|a)*",
    r"(\w+\s?)*",
    r"^(\s*,\s*)*$",  # whitespace on both sides of a separator: split two ways per round
    r"(\w+\.\w+)*",
    r"(a{1,2})*",
    r"^(a|aa)+$",
    r"(x+x+)+y",
    r"(\d|\w)+",
    r"(.|\s)*",
    r"(?=(a+)+b)",  # inside a lookahead too
    r"(?i)(a|A)+",  # the same letter once case is ignored
    r"(a*)*",
    r"(a?)+",
    r"^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}[a-z]{2,3}$",
]

SAFE = [
    r"^\d+(\.\d+)*$",
    r"^[a-z0-9]+(-[a-z0-9]+)*$",
    r"([a-z0-9]+\.)*",
    r"(ab+c)*",
    r"(a|ab)*",
    r"^(\d{1,3}\.){3}\d{1,3}$",
    r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$",
    r"^[^,]+(,[^,]+)*$",
    r"^\S+\s\S+$",
    r".*foo.*",
    r"^[a-f0-9]{64}$",
    r"^\+?[1-9]\d{1,14}$",
    r"^(\d+(\.\d+)?(ms|s|m|h|d))+$",
    r"^ORD-\d+$",
    r"^(?P<x>a)(?P=x)$",
]


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_exponential_patterns_are_refused(pattern: str) -> None:
    problem = regex_problem(pattern)
    assert problem is not None and "can backtrack catastrophically" in problem, problem


@pytest.mark.parametrize("pattern", SAFE)
def test_safe_loops_are_accepted(pattern: str) -> None:
    assert regex_problem(pattern) is None


def test_the_refusal_is_real() -> None:
    """A refused pattern really is exponential in Python's `re`: each 4 more characters of
    input multiply the time (here ~ x16 per step); an accepted look-alike stays flat. Each
    size is timed three times and the best kept: a busy machine only ever adds time."""
    bad, good = re.compile(r"^(\s*,\s*)*$"), re.compile(r"^(,\s*)*$")
    timings = []
    for n in (12, 16):
        tries = []
        for _ in range(3):
            started = time.perf_counter()
            bad.match(", " * n + "x")
            tries.append(time.perf_counter() - started)
        timings.append(min(tries))
    assert timings[1] > 4 * timings[0] > 0
    started = time.perf_counter()
    good.match(", " * 10_000 + "x")
    assert time.perf_counter() - started < 0.05
    assert regex_problem(good.pattern) is None


def test_the_message_names_the_loop_and_invalid_patterns_are_reported() -> None:
    problem = regex_problem(r"^[a-z]+(\w+\s?)*$")
    assert problem is not None and "'(\\\\w+\\\\s?)*' can match the same text" in problem
    problem = regex_problem("(abc")
    assert problem is not None and "not a valid regular expression" in problem


def test_big_patterns_are_checked_fast_or_refused() -> None:
    words = "|".join(f"word{i}" for i in range(60))
    started = time.perf_counter()
    assert regex_problem(f"^({words})$") is None
    looped = regex_problem(f"^({words})+$")  # 60 ways to start each round: too many pairs
    assert looped is not None and "too complex to analyse" in looped
    assert "longer than 1,000" in (regex_problem("a" * 1001) or "")
    assert time.perf_counter() - started < 1.0


def test_one_budget_bounds_the_patterns_of_a_whole_spec() -> None:
    words = "|".join(f"word{j}" for j in range(40))  # safe, a few thousand steps each
    budget = Budget(100_000)
    found = [regex_problem(f"^(v{i}|{words})$", budget) for i in range(40)]
    assert found[0] is None
    assert "too complex to analyse" in (found[-1] or "")
    assert budget.left < 0
