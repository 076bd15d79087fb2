"""Plain-text tables for the CLI reports."""

from __future__ import annotations


def render(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns; the last column is not padded."""
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header) - 1)]

    def line(cells) -> str:
        padded = [str(c).ljust(w) for c, w in zip(cells, widths)]
        return "  ".join((*padded, str(cells[-1]))).rstrip()

    return [line(header), line(tuple("-" * len(h) for h in header)), *(line(r) for r in rows)]
