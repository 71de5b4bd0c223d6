"""One line of a benchmark's table: label, figure, target and verdict (bench/speed.py and
bench/speed_dev.py print theirs alike; here so neither imports the other for it)."""

from __future__ import annotations


def row(label: str, value: str, target: str = "", ok: bool | None = None) -> None:
    verdict = "" if ok is None else ("  ok" if ok else "  MISSED")
    print(f"  {label:46} {value:>22}  {target}{verdict}")
