"""Table: head selection by evidence vs head scores on the Markov 4-path task (docs/results.md §3.3).
Reads docs/figures/head_selection_markov.json (examples/head_selection_markov.py)."""

import json
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "docs" / "figures" / "head_selection_markov.json"


def render() -> str:
    d = json.loads(SRC.read_text())
    lines = [
        "| N | head | evidence cost of removal (nats) | accuracy drop, removed (points) | "
        "accuracy drop, silenced (points) | score (across) | score (per layer) |",
        "|---|---|---|---|---|---|---|",
    ]
    for N, r in d["widths"].items():
        for h in d["heads"]:
            rm = r["removal"][h]
            lines.append(
                f"| {N} | {h} | {rm['evidence_cost']:.2f} | {100 * rm['accuracy_drop']:.1f} | "
                f"{100 * r['silencing_drop'][h]:.1f} | {r['scores_all'][h]:.3f} | {r['scores_layer'][h]:.3f} |"
            )
    lines.append("")
    for N, r in d["widths"].items():
        st = r["stages"]
        path = "; ".join(
            f"remove {s['removed'][-1]} -> ln Z {s['log_evidence']:.2f}, accuracy {100 * s['test_accuracy']:.1f}%"
            for s in st[1:]
        )
        lines.append(
            f"* N = {N}: full network ln Z {st[0]['log_evidence']:.2f}, accuracy "
            f"{100 * st[0]['test_accuracy']:.1f}%; evidence elimination: {path}; "
            f"score order (lowest first): {', '.join(r['score_order_all'])}."
        )
    return "\n".join(lines) + "\n"
