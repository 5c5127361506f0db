"""docs/theory_solver.md "Measured numbers": saddle-point solve times on an idle machine.

Reads benchmarks/theory/results.json (benchmarks/theory/run.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, num, sci, table  # noqa: E402


def _s(x: float) -> str:
    return f"{x:.3f}" if x < 1 else f"{x:.3g}"


def rows(d: dict, hessian: bool = False) -> str:
    out = []
    for r in d["rows"]:
        ref = sci(r["reference_rel_diff"], 1) if "reference_rel_diff" in r else "–"
        row = [r["problem"], r["width"], r["iterations"], sci(r["grad_norm"], 1)]
        row += [f"{r['hessian_min_eig']:.3g}"] if hessian else []
        row += [
            _s(r["median_s"]),
            _s(r["first_call_s"]),
            ref,
            num(r.get("reference_iterations"), "d"),
            "yes" if r["converged"] and r["hessian_pd"] else "**no**",
        ]
        out.append(row)
    head = ["problem", "N", "Newton iterations", "rel. gradient"] + (["Hessian min eig"] if hessian else [])
    head += [
        "median solve (s)",
        "first call incl. compilation (s)",
        "reference rel. diff (max over U_l)",
        "reference iterations",
        "converged, PD Hessian",
    ]
    return table(head, out)


def render() -> str:
    return rows(load("benchmarks/theory/results.json", "benchmarks/theory/run.py"), hessian=True)
