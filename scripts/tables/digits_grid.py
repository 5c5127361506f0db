"""§2a of docs/results.md: digits theory scan, validation / test accuracy per width and temperature.

Reads ``accuracy_grid`` of docs/figures/digits_accuracy_vs_width.json (examples/digits_accuracy_vs_width.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import figure, g, pct, table  # noqa: E402


def render() -> str:
    d = figure("digits_accuracy_vs_width.json", "examples/digits_accuracy_vs_width.py")
    val, test = d["accuracy_grid"]["val"], d["accuracy_grid"]["test"]
    rows = [
        [f"T = {g(T)} (val / test)"] + [f"{pct(val[i][j])} / {pct(test[i][j])}" for i in range(len(d["widths"]))]
        for j, T in enumerate(d["temperatures"])
    ]
    rows.append(
        ["**T on validation**"] + [f"**{pct(a)}** ({g(T)})" for a, T in zip(d["theory"]["test"], d["selected_T"])]
    )
    return table(["N"] + [str(n) for n in d["widths"]], rows)
