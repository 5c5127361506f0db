"""Table: Spearman correlation of digits head scores with the GD single-head drops, scores normalised across
layers vs per layer (docs/results.md §3.5).  Reads docs/figures/head_selection_score_norm.json."""

import json
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "docs" / "figures" / "head_selection_score_norm.json"


def render() -> str:
    d = json.loads(SRC.read_text())
    lines = ["| head | GD drop (points) | score, across layers | score, per layer |", "|---|---|---|---|"]
    for i, h in enumerate(d["heads"]):
        lines.append(
            f"| {h} | {100 * d['drops'][i]:.1f} | {d['all']['scores'][i]:.3f} | {d['layer']['scores'][i]:.3f} |"
        )
    lines.append("")
    for mode, label in (("all", "across layers"), ("layer", "per layer")):
        o = d[mode]
        lines.append(
            f"* normalised {label}: Spearman ρ = {o['spearman_rho']:.3f}, p = {o['spearman_p']:.3f} "
            f"(exact permutation p = {o['spearman_p_exact']:.3f}), 8 heads;"
        )
    for w in d["within_layer"]:
        lines.append(
            f"* within layer {w['layer']} only (either normalisation): ρ = {w['spearman_rho']:.3f}, exact "
            f"permutation p = {w['spearman_p_exact']:.3f} ({w['n_heads']} heads)."
        )
    return "\n".join(lines) + "\n"
