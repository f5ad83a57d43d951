"""``logx patterns list``'s text view: the catalog as a table."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from .._catalog import Catalog

PIPE_WIDTH = 160  # a pipe has no width: wide enough for whole ids and a title


def catalog_table(catalog: Catalog) -> Table:
    table = Table(title=f"{len(catalog.patterns)} patterns")
    # an id is what you copy and grep for: never cut, whatever the width; the title wraps
    table.add_column("id", no_wrap=True, min_width=max((len(p.id) for p in catalog.patterns), default=2))
    for col in ("severity", "phase", "priority"):
        table.add_column(col, no_wrap=True)
    table.add_column("title", overflow="fold", ratio=1)
    for p in sorted(catalog.patterns, key=lambda p: (p.source, -p.priority)):
        table.add_row(p.id, p.severity, p.phase, str(p.priority), p.title)
    return table


def print_catalog(catalog: Catalog, console: Console) -> None:
    if not console.is_terminal:
        console.width = PIPE_WIDTH
    console.print(catalog_table(catalog))
