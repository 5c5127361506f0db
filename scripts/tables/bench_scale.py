"""docs/benchmarks.md: the P x P route against path space (docs/theory.md §4.10) as P grows.

Reads benchmarks/scale/results.json (benchmarks/scale/run.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, table  # noqa: E402


def _route(row, route, key, fmt):
    v = row["routes"].get(route)
    return "—" if v is None else fmt(v[key])


def render() -> str:
    d = load("benchmarks/scale/results.json", "benchmarks/scale/run.py")
    rows = []
    for r in d["rows"]:
        diff = f"{max(r['rel_diff_value'], r['rel_diff_grad'], r['rel_diff_U']):.1e}" if "rel_diff_value" in r else "—"
        rows.append(
            [
                f"{r['P']:,}",
                _route(r, "dense", "grad_s", lambda s: f"{s * 1e3:.1f} ms"),
                _route(r, "path", "grad_s", lambda s: f"{s * 1e3:.1f} ms"),
                _route(r, "dense", "solve_s", lambda s: f"{s:.2f} s"),
                _route(r, "path", "solve_s", lambda s: f"{s:.2f} s"),
                f"{r['factorise_s']:.2f} s",
                _route(r, "dense", "kernel_bytes", lambda b: f"{b / 1e6:.0f} MB"),
                _route(r, "path", "kernel_bytes", lambda b: f"{b / 1e6:.0f} MB"),
                diff,
            ]
        )
    head = [
        "P = N",
        "density + gradient, dense",
        "… path space",
        "solve, dense",
        "… path space",
        "path-space QR",
        "kernel data, dense",
        "… path space",
        "max rel. difference",
    ]
    return (
        table(head, rows) + f"\n{d['task']}; median of {d['repeats']} compiled calls; {d['machine']['cpus']} cores.\n"
    )
