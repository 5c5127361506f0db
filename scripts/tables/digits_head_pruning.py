"""§2b of docs/results.md: theory head scores vs single-head removal, and cumulative pruning curves.

Reads docs/figures/digits_head_pruning.json (examples/digits_head_pruning.py).
"""

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import figure, pct, table  # noqa: E402


def render() -> str:
    d = figure("digits_head_pruning.json", "examples/digits_head_pruning.py")
    order = d["ascending_order"]
    scores = table(
        ["head (layer-head)"] + order,
        [
            ["theory score (max = 1)"] + [f"{d['scores'][h]:.2f}" for h in order],
            ["accuracy drop, removed alone (points)"] + [pct(d["drops"][h]) for h in order],
        ],
    )
    curves = {
        "ascending score": d["curve_ascending"],
        "descending score": d["curve_descending"],
        "random orders (mean)": d["curve_random_mean"],
    }
    k = max(i for c in curves.values() for i, a in enumerate(c) if a is not None and math.isfinite(a)) + 1
    prune = table(
        ["order"] + [str(i) for i in range(k)], [[name] + [pct(a) for a in c[:k]] for name, c in curves.items()]
    )
    return (
        scores + f"\nCumulative pruning, {d['eval_set']} accuracy (%) after removing k = 0 … {k - 1} heads:\n\n" + prune
    )
