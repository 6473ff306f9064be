"""One rich console for the whole tool, and a progress bar that stays quiet when not on a terminal."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

console = Console(stderr=True)
out = Console(width=None if Console().is_terminal else 120)


@contextmanager
def progress(description: str, total: int) -> Iterator[callable]:
    """Yield an `advance(n=1)` function; draws a bar on a terminal, nothing in CI logs."""
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    with bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)
