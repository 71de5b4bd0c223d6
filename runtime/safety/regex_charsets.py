"""Character sets of a regular expression compared for the backtracking analysis
(runtime.safety.regex_safety): can one character be read by both? The answer may be "yes" when
unsure, never "no": a doubtful overlap makes a pattern refused, not trusted.

Small explicit sets are compared character by character (case variants too under `(?i)`);
the classes `\\d \\w \\s` and their complements by what is known of them (`\\d` is inside
`\\w`, neither meets `\\s`); anything else is taken to overlap.
"""

from __future__ import annotations

import re
from functools import lru_cache

from runtime.safety.regex_parse import CharSet

_ENUMERABLE = 4096  # a character set this small is compared character by character
_CLASS_RE = {name: re.compile("\\" + name) for name in "dDwWsS"}
#: Pairs of classes that share no character (\d is a subset of \w).
_DISJOINT = {frozenset(p) for p in ("dD", "wW", "sS", "ds", "ws", "dW")}


def single(chars: CharSet) -> int | None:
    """The one character a set holds, if it holds exactly one."""
    if not chars.negated and not chars.classes and len(chars.ranges) == 1:
        low, high = chars.ranges[0]
        return low if low == high else None
    return None


@lru_cache(maxsize=4096)
def overlap(a: CharSet, b: CharSet, fold: bool) -> bool:
    """Can one character be in both sets? True when unsure."""
    for small, other in ((a, b), (b, a)):
        if _enumerable(small):
            return any(_contains(other, code, fold) for code in _codes(small))
    if fold or (a.negated and b.negated):
        return True
    if a.negated or b.negated:  # `[^…]` against classes or a large range
        excluded, kept = (a, b) if a.negated else (b, a)
        return bool(kept.ranges) or not kept.classes <= _covered(excluded.classes)
    return (
        any(lo <= hi2 and lo2 <= hi for lo, hi in a.ranges for lo2, hi2 in b.ranges)
        or any(frozenset((x, y)) not in _DISJOINT for x in a.classes for y in b.classes)
        or any(_range_meets(span, b.classes) for span in a.ranges)
        or any(_range_meets(span, a.classes) for span in b.ranges)
    )


def _covered(classes: frozenset[str]) -> frozenset[str]:
    return classes | {"d"} if "w" in classes else classes


def _range_meets(span: tuple[int, int], classes: frozenset[str]) -> bool:
    low, high = span
    if not classes:
        return False
    if high - low >= _ENUMERABLE:
        return True
    return any(_CLASS_RE[c].match(chr(code)) for code in range(low, high + 1) for c in classes)


def _enumerable(chars: CharSet) -> bool:
    return (
        not chars.negated
        and not chars.classes
        and sum(hi - lo + 1 for lo, hi in chars.ranges) <= _ENUMERABLE
    )


def _codes(chars: CharSet) -> list[int]:
    return [code for lo, hi in chars.ranges for code in range(lo, hi + 1)]


def _contains(chars: CharSet, code: int, fold: bool) -> bool:
    variants = {chr(code)}
    if fold:
        variants |= {v for v in (chr(code).lower(), chr(code).upper()) if len(v) == 1}
    hit = any(lo <= ord(v) <= hi for v in variants for lo, hi in chars.ranges) or any(
        _CLASS_RE[c].match(v) for v in variants for c in chars.classes
    )
    return hit != chars.negated
