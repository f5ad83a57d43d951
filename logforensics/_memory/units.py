"""Rounding and the text of memory figures, shared by every memory module and view."""

from __future__ import annotations

from typing import Any


def rounded(x: float | None, nd: int = 2) -> float | None:
    """``x`` rounded for the JSON (``None`` stays ``None``)."""
    return None if x is None else round(x, nd)


def number(v: Any) -> float | None:
    """An event field as a float; ``None`` when it is not a number (bools are not)."""
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def gib_text(x: float | None) -> str:
    """``12.30``, ``−4.14`` (a real minus sign), or ``unknown``."""
    if x is None:
        return "unknown"
    text = f"{x:.2f}"
    return "\u2212" + text[1:] if text.startswith("-") else text


def frac(x: float) -> str:
    """A fraction as SGLang users write it: ``0.80``, ``0.975``."""
    text = f"{x:.3f}".rstrip("0")
    return text if len(text.split(".")[1]) >= 2 else f"{x:.2f}"


def put_figure(out: dict[str, Any], name: str, value: Any, nd: int = 2) -> None:
    """``out[name]`` = ``value`` as a placeholder shows it (floats at ``nd`` decimals); an
    unknown (``None``) stays absent, so a template shows ``<name>``."""
    if value is not None:
        out[name] = f"{value:.{nd}f}" if isinstance(value, float) else value
