"""Times as people read them, for every printer of times (CLI, pages, reports)."""

from __future__ import annotations


def format_ns(ns: int | None) -> str:
    if ns is None:
        return ""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.2f} {unit}"
    return f"{ns} ns"


def format_value(value: float, unit: str) -> str:
    """A regression's value in its unit: "ns" (kernel times) or "us" (compile times)."""
    return format_ns(int(value)) if unit == "ns" else format_ns(int(value * 1000))
