"""Sampled attention on the hidden-Markov task (benchmarks/attention/results.json, written by
benchmarks/attention/run.py): accuracy of the posterior mean of f on the 1000 test sequences, the gates on f and
the cost of each case, with the theory's accuracy at the task's hand-built heads."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, table  # noqa: E402


#: the ``basis`` labels of benchmarks/attention/run.py
BASES = {
    "pos_pc2": "pos+PC2",
    "pos_pc2_centred": "pos+PC2, centred and unwhitened",
    "none": "every token direction",
}


def render() -> str:
    d = load("benchmarks/attention/results.json", "benchmarks/attention/run.py")
    hand = {(h["P"], h["limit"], h["width"]): h["accuracy"] for h in d["hand_built"]}
    rows = []
    for c in d["cases"]:
        width = "GP limit" if c["limit"] == "gp" else f"N = {c['width']}"
        rows.append(
            [
                str(c["P"]),
                width,
                BASES[c["basis"]],
                str(c["rank"]),
                f"{c['chains']} × ({c['warmup']} + {c['draws']})",
                f"{c['accuracy']:.3f}",
                ", ".join(f"{a:.3f}" for a in c["accuracy_per_chain"]),
                f"{hand[(c['P'], c['limit'], c['width'])]:.3f}",
                f"{c['max_rhat_f']:.2f}",
                f"{c['min_ess_bulk_f']:.0f}",
                str(c["divergences"]),
                f"{c['mean_tree_depth']:.1f}",
                f"{c['gradients']:,}",
                f"{c['wall_s']:.0f} s",
            ]
        )
    head = [
        "P",
        "width",
        "attention reads",
        "rank",
        "NUTS",
        "accuracy",
        "per chain",
        "hand-built heads (theory)",
        "max R-hat f",
        "min bulk ESS f",
        "divergences",
        "mean tree depth",
        "gradients",
        "wall",
    ]
    return table(head, rows) + f"\nT = 0.1, chains from prior draws, default prior scale; machine: {d['how']}.\n"
