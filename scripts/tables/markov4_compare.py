"""§1e of docs/results.md: theory vs sampled networks (one data seed) on the Markov 4-path task.

Reads docs/figures/compare_markov4/compare.json (``bayes-attn compare``, scripts/reproduce_markov.sh)
for the gaps, and docs/figures/markov4_accuracy_vs_width.json (examples/markov_accuracy_vs_width.py)
for the per-chain accuracies and R-hat of the same runs.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import figure, pct, sci, sig, table  # noqa: E402


def render() -> str:
    rows = figure("compare_markov4/compare.json", "bayes-attn compare (scripts/reproduce_markov.sh)")
    acc = figure("markov4_accuracy_vs_width.json", "examples/markov_accuracy_vs_width.py")
    out = []
    for r in sorted(rows, key=lambda r: r["width"]):
        s = acc["sampled"].get(str(r["width"]))
        if s is None:
            raise KeyError(f"markov4_accuracy_vs_width.json has no sampled run at N = {r['width']}")
        out.append(
            [
                r["width"],
                f"{pct(s['chain_acc_mean'], 2)} ± {pct(s['chain_acc_sd'], 2)} %",
                f"{pct(r['acc_theory'])} %",
                f"{sci(r['mean_rms_gap'])} ({sci(r['mean_rms_mcse'], 1)})",
                sig(r["mean_rel_err"]),
                sig(r["U_rel_err"]),
                f"{s['rhat_max']:.4f}",
                "yes" if r["converged"] else "**no**",
            ]
        )
    return table(
        [
            "N",
            "sampled acc. (mean ± sd over chains)",
            "theory acc.",
            "RMS gap of ⟨f⟩ (MCSE)",
            "rel. gap of ⟨f⟩",
            "rel. gap of U",
            "max R-hat (f, U)",
            "converged",
        ],
        out,
    )
