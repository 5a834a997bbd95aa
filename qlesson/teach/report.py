"""Plain-text tables with fixed formatting, so notebook outputs are stable under nbval.

>>> print_table([{"method": "per-tensor", "mae": 0.1}, {"method": "per-channel", "mae": 0.00536}], {"mae": ".4f"})
method      |    mae
------------+-------
per-tensor  | 0.1000
per-channel | 0.0054
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def fmt_value(value: Any, spec: str = "") -> str:
    """Format one cell: lists element-wise, floats by ``spec`` (``"+.4f"``), the rest with ``str``.

    >>> fmt_value([0.0429, -0.0857], "+.3f"), fmt_value(-0.0, ".2f")
    ('[+0.043, -0.086]', '0.00')
    """
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(fmt_value(v, spec) for v in value) + "]"
    if isinstance(value, float) and spec:
        text = format(value, spec)
        return format(0.0, spec) if float(text) == 0 else text  # no "-0.000" in tables
    if spec and isinstance(value, int) and not isinstance(value, bool):
        return format(value, spec)
    return str(value)


def table(rows: Sequence[Mapping[str, Any]], formats: Mapping[str, str] | None = None) -> str:
    """Rows of dicts -> an aligned text table (text left, numbers right)."""
    formats = formats or {}
    if not rows:
        return "(no rows)"
    cols = list(rows[0])
    cells = [[fmt_value(r[c], formats.get(c, "")) for c in cols] for r in rows]
    numeric = [all(isinstance(r[c], (int, float)) and not isinstance(r[c], bool) for r in rows) for c in cols]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return " | ".join(parts).rstrip()

    sep = "-+-".join("-" * w for w in widths)
    return "\n".join([line(cols), sep, *(line(c) for c in cells)])


def print_table(rows: Sequence[Mapping[str, Any]], formats: Mapping[str, str] | None = None) -> None:
    """Print :func:`table`."""
    print(table(rows, formats))
