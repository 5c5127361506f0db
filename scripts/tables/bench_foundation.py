"""docs/benchmarks.md: full vs collapsed NUTS on the Markov 4-path task.

Reads benchmarks/foundation/results.json (benchmarks/foundation/run.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, table  # noqa: E402

MODELS = {"full": "full (every weight sampled)", "collapsed": "collapsed (V^(0) integrated out)"}
MAX_TREE_DEPTH = 10  # NumPyro's default, which benchmarks/foundation/run.py keeps


def _steps(runs: list[dict]) -> str:
    lo, hi = min(r["mean_steps"] for r in runs), max(r["mean_steps"] for r in runs)
    text = f"{lo:.0f}" if round(lo) == round(hi) else f"{lo:.0f}–{hi:.0f}"
    return text + (" (tree depth saturated)" if lo == 2**MAX_TREE_DEPTH - 1 else "")


def render() -> str:
    d = load("benchmarks/foundation/results.json", "benchmarks/foundation/run.py")
    rows = []
    for m, runs in d["runs"].items():
        rows.append(
            [
                MODELS.get(m, m),
                f"{d['median_wall_s'][m]:.0f} s",
                ", ".join(f"{r['wall_s']:.0f}" for r in runs) + " s",
                f"{max(r['max_rhat_f'] for r in runs):.4f}",
                f"{min(r['min_ess_bulk_f'] for r in runs):.0f}",
                _steps(runs),
            ]
        )
    return table(
        ["model", "median wall", "runs", "max R-hat (f)", "min bulk ESS (f)", "leapfrog steps / iteration"], rows
    )
