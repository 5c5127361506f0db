"""Helpers shared by the evidence table generators of scripts/tables/ (not a table itself: no ``render``)."""

from __future__ import annotations

from _common import figure


def learned_markov_table(name: str) -> str:
    """Learned vs hand-built vs random heads on the Markov task, from ``docs/figures/NAME``
    (examples/learn_attention_markov.py): ln Z and theory test accuracy per width, and the fit's summary."""
    d = figure(name, "examples/learn_attention_markov.py")
    heads = [k for k in ("hand", "random", "learned", "gd") if k in d]
    lines = [
        "| heads | " + " | ".join(f"N = {N}: ln Z / acc." for N in d["widths"]) + " |",
        "|---|" + "---|" * len(d["widths"]),
    ]
    for k in heads:
        cells = [f"{e:.1f} / {100 * a:.1f}%" for e, a in zip(d[k]["log_evidence"], d[k]["test_accuracy"])]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    val = [v for v in d["val_accuracy"] if v is not None]
    lines.append("")
    lines.append(
        f"Learned at N = {d['width']}, T = {d['T']}: {d['steps']} Adam steps (lr {d['lr']}), "
        f"{d['seconds']:.0f} s; ln Z (E1) {d['log_evidence'][0]:.2f} → {max(d['log_evidence']):.2f} "
        f"(best step {d['best_step']}); validation accuracy {100 * val[0]:.1f}% → {100 * val[-1]:.1f}%; "
        f"{d['message']}. ln Z is the saddle-point log evidence (E1) at each width; accuracy = theory "
        f"predictor on {d.get('n_test', 1000)} test sequences."
    )  # files without n_test: the example's 1000
    return "\n".join(lines) + "\n"
