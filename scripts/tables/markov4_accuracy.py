"""§1a of docs/results.md: theory test accuracy vs width on the Markov 4-path task, and the GP baselines.

Reads docs/figures/markov4_accuracy_vs_width.json (examples/markov_accuracy_vs_width.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import figure, g, pct, table  # noqa: E402

WRITER = "examples/markov_accuracy_vs_width.py --config configs/markov_main.toml"
PAPER_T = "theory_test_accuracy_T"  # + the paper's temperature
GP_NAMES = {"GP all paths": "all paths", "GP good path": "good path only", "GP good + denoising": "good + denoising"}


def _selected(d: dict) -> list[str]:
    """Selected T per width, with the temperatures that tie with it on validation."""
    out = []
    for T, val in zip(d["selected_T"], d["val_accuracy_grid"]):
        ties = [t for t, v in zip(d["temperatures"], val) if v == max(val) and t != T]
        out.append(g(T) + (f" (tie with {', '.join(g(t) for t in ties)})" if ties else ""))
    return out


def render() -> str:
    d = figure("markov4_accuracy_vs_width.json", WRITER)
    widths = d["widths"]
    key = next(k for k in d if k.startswith(PAPER_T))  # e.g. theory_test_accuracy_T0.01
    head = ["N (α = P/N)"] + [f"{n} ({d['P'] / n:.2g})" for n in widths]
    rows = [
        ["T chosen on validation"] + _selected(d),
        ["theory, T on validation"] + [pct(a) for a in d["theory_test_accuracy"]],
        ["theory, T on test (original protocol)"] + [pct(a) for a in d["theory_test_selected_accuracy"]],
        [f"theory, T = {key[len(PAPER_T) :]} (paper's value)"] + [pct(a) for a in d[key]],
    ]
    gp = ", ".join(
        f"{GP_NAMES.get(k, k)} **{pct(v['test_accuracy'])} %** (T = {g(v['T'])})" for k, v in d["gp"].items()
    )
    return table(head, rows) + f"\nGP baselines (T on validation): {gp}.\n"
