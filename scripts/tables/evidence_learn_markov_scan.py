"""Table: what stops the evidence from overfitting the attention on the Markov task? (docs/results.md §3.1).
Reads docs/figures/learn_markov_scan.json (examples/learn_attention_markov_scan.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import figure, pct, table  # noqa: E402


def render() -> str:
    d = figure("learn_markov_scan.json", "examples/learn_attention_markov_scan.py")
    rows = []
    order = lambda kv: (
        kv[1]["basis_components"],
        kv[1]["prior_scale"] is not None,
        kv[1]["style"],
        kv[1]["P"],
        kv[1]["T"],
    )  # noqa: E731  (plain type-II ML first, by P and T; then prior; then basis)
    for name, r in sorted(d.items(), key=order):
        va = r["val_accuracy"]
        beats = "yes" if r["log_evidence_best"] > r["log_evidence_hand"] else "no"
        done = len(r["log_evidence"]) - 1  # steps taken (a failed solve stops the run early)
        steps = f"{r['steps']}" if done == r["steps"] else f"{done} of {r['steps']}: {r['message']}"
        rows.append(
            [
                name,
                steps,
                r["lr"],
                f"{r['log_evidence_start']:.1f} → {r['log_evidence_best']:.1f}",
                f"{r['log_evidence_hand']:.1f}",
                beats,
                f"{pct(va[0])} → {pct(va[-1])} (max {pct(max(va))})",
                pct(r["test_accuracy_learned"]),
                pct(r["test_accuracy_hand"]),
                f"{r['seconds']:.0f}",
            ]
        )
    head = [
        "configuration (N = 100, random start)",
        "Adam steps (of those asked)",
        "lr",
        "ln Z (E1): start → best",
        "ln Z, hand heads",
        "learned above hand?",
        "validation acc. (%)",
        "test acc., learned (%)",
        "test acc., hand (%)",
        "s",
    ]
    return table(head, rows)
