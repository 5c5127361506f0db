"""Shared helpers of the Potts table generators (scripts/tables/potts_*.py)."""

import json
from pathlib import Path

import numpy as np

FIG = Path(__file__).resolve().parents[2] / "docs" / "figures"


def load(name):
    p = FIG / name
    return json.loads(p.read_text()) if p.exists() else None


def mean_se(x):
    x = np.asarray(x, float)
    return float(x.mean()), (float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else float("nan"))


def fmt_ms(x, d=3):
    m, s = mean_se(x)
    return f"{m:.{d}f}" if not np.isfinite(s) else f"{m:.{d}f} ± {s:.{d}f}"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"
