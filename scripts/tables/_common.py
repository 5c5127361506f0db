"""Helpers shared by the table generators of scripts/tables/ (not a table itself: no ``render``).

A generator imports this module after ``sys.path.insert(0, str(Path(__file__).parent))``
(scripts/gen_docs.py loads each generator from its file path, not as a package member).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "figures"


class MissingData(FileNotFoundError):
    """The JSON file behind a table is missing or lacks a field (never rendered as an empty table)."""


def load(rel: str, writer: str) -> dict | list:
    """Parsed JSON file ``rel`` (relative to the repository root); ``writer`` names the script that
    writes it, for the error message when it is missing."""
    path = ROOT / rel
    if not path.is_file():
        raise MissingData(f"{rel} is missing: it is written by {writer}; run that first")
    return json.loads(path.read_text())


def figure(name: str, writer: str) -> dict | list:
    """``docs/figures/NAME`` (see :func:`load`)."""
    return load(f"docs/figures/{name}", writer)


def table(header: list[str], rows: list[list]) -> str:
    """Markdown table, ending in a newline."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def pct(x: float, d: int = 1) -> str:
    """Fraction ``x`` in percent with ``d`` decimals (0.9605 -> '96.05' for d = 2)."""
    return f"{100 * x:.{d}f}"


def num(x: float | None, spec: str) -> str:
    """``format(x, spec)``, or an en dash for a missing / non-finite value."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return format(x, spec)


def minus(s: str) -> str:
    """Typographic minus sign in a formatted number."""
    return s.replace("-", "−") if s.startswith("-") else s


def g(x: float) -> str:
    """Short form of a grid value (temperature, width): 0.1, 0.03, 1000."""
    return f"{x:g}"


def width_label(n: int) -> str:
    """10^4-style label for round powers of ten >= 10^4, '3x10^4' for three times one, else the integer."""
    for mant in (1, 3):
        e = round(math.log10(n / mant)) if n > 0 else 0
        if e >= 4 and mant * 10**e == n:
            return f"10^{e}" if mant == 1 else f"{mant}x10^{e}"
    return str(n)


def sci(x: float, d: int = 2) -> str:
    """Scientific notation with ``d`` decimals and a short exponent: 0.0111 -> '1.11e-2'."""
    m, e = f"{x:.{d}e}".split("e")
    return f"{m}e{int(e)}"


def sig(x: float, n: int = 2) -> str:
    """``n`` significant digits, trailing zeros kept: 0.0100 -> '0.010'."""
    return f"{x:#.{n}g}".rstrip(".")
