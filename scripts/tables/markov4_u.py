"""§1b of docs/results.md: entries of the theory's U* on the Markov 4-path task at three widths.

Reads docs/figures/markov4_U_heatmaps.json (examples/markov_u_heatmaps.py).
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import figure, minus, table  # noqa: E402

SHOWN = [("g", "g"), ("d", "d"), ("g", "d"), ("a1", "a1"), ("a2", "a2")]
BOLD = ("g", "d")  # the negative off-diagonal entry the text discusses


def render() -> str:
    d = figure("markov4_U_heatmaps.json", "examples/markov_u_heatmaps.py")
    rows = []
    for n in sorted(d, key=int):
        lab = d[n]["labels"]
        U = np.asarray(d[n]["theory"])
        idx = {a: i for i, a in enumerate(lab)}
        cells = []
        for a, b in SHOWN:
            s = minus(f"{U[idx[a], idx[b]]:.2f}")
            cells.append(f"**{s}**" if (a, b) == BOLD and n == min(d, key=int) else s)
        shown = {frozenset((idx[a], idx[b])) for a, b in SHOWN}
        other = [
            (abs(U[i, j]), i, j)
            for i in range(len(lab))
            for j in range(i + 1, len(lab))
            if frozenset((i, j)) not in shown
        ]
        v, i, j = max(other)
        cells.append(f"{v:.2f} ({lab[i]},{lab[j]})")
        rows.append([n] + cells)
    return table(["N"] + [f"U_{a}{b}" for a, b in SHOWN] + ["largest other \\|U\\|"], rows)
