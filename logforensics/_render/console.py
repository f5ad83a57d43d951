"""The one place a rich console is made for a person's terminal."""

from __future__ import annotations

from rich.console import Console


def make_console(width: int | None = None, stderr: bool = False) -> Console:
    """Colour only on a TTY; rich honours NO_COLOR itself."""
    return Console(stderr=stderr, width=width, highlight=False, soft_wrap=False)
