"""Table: digits Q/K learned by evidence vs the GD network's Q/K, and head selection by evidence
(docs/results.md §3.2, §3.4).  Reads docs/figures/learn_digits.json (examples/learn_attention_digits.py)."""

import json
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "docs" / "figures" / "learn_digits.json"
LABELS = {
    "theory_gd_qk": "theory, GD Q/K",
    "theory_random_qk": "theory, random Q/K (GD initialisation)",
    "evidence_from_random": "theory, Q/K learned by evidence from random",
    "evidence_from_gd": "theory, Q/K learned by evidence from GD Q/K",
}


def render() -> str:
    d = json.loads(SRC.read_text())
    lines = [
        f"| model (P = {d['P']}, N = {d['width']}, T = {d['T']}) | ln Z (E1) | validation acc. | test acc. |",
        "|---|---|---|---|",
        f"| GD network (trained Q/K, V, a) | – | – | {100 * d['gd_test_accuracy']:.1f}% |",
    ]
    for k, r in d["runs"].items():
        extra = (
            f" ({len(r['history']) - 1} Adam steps, lr {d['lr']}, best step {r['best_step']})" if "history" in r else ""
        )
        lines.append(
            f"| {LABELS.get(k, k)}{extra} | {r['log_evidence']:.1f} | {100 * r['val_accuracy']:.1f}% | "
            f"{100 * r['test_accuracy']:.1f}% |"
        )
    hs = d["head_selection"]
    lines.append("")
    lines.append("Head selection with the GD Q/K (heads `layer-head`, 0-based):")
    lines.append("")
    lines.append(
        "| head | GD single-head drop (points) | evidence cost of removal (nats) | score, across layers | score, per layer |"
    )
    lines.append("|---|---|---|---|---|")
    for i, h in enumerate(hs["heads"]):
        lines.append(
            f"| {h} | {100 * hs['gd_drops'][i]:.1f} | {hs['evidence_cost_single'][i]:.2f} | "
            f"{hs['scores_all'][i]:.3f} | {hs['scores_layer'][i]:.3f} |"
        )
    lines.append("")
    for k, lab in (
        ("score_all", "score (across layers)"),
        ("score_layer", "score (per layer)"),
        ("evidence_cost", "evidence cost of removal"),
    ):
        c = hs["spearman"][k]
        lines.append(f"* Spearman ρ of {lab} with the GD drops: {c['rho']:.3f} (p = {c['p']:.3f}, {c['n']} heads);")
    order = [f"{r[0]}-{r[1]}" for r in hs["stages"][-1]["removed"]]
    ev_curve = ", ".join(f"{100 * a:.1f}" for a in hs["gd_pruning_curves"]["evidence"])
    sc_curve = ", ".join(f"{100 * a:.1f}" for a in hs["gd_pruning_curves"]["score_all"])
    lines.append(
        f"* evidence elimination order: {', '.join(order)}; GD accuracy (%) removing heads in that order: "
        f"{ev_curve}; in ascending-score order: {sc_curve}."
    )
    return "\n".join(lines) + "\n"
