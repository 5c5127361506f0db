"""Table: attention learned by evidence on the Markov 4-path task vs hand-built and random heads
(docs/evidence.md §5.1, rank-2 Q/K).  Reads docs/figures/learn_markov_qk.json (examples/learn_attention_markov.py)."""

import json
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "docs" / "figures" / "learn_markov_qk.json"


def render() -> str:
    d = json.loads(SRC.read_text())
    heads = [k for k in ("hand", "random", "learned", "gd") if k in d]
    lines = ["| heads | " + " | ".join(f"N = {N}: ln Z / acc." for N in d["widths"]) + " |",
             "|---|" + "---|" * len(d["widths"])]
    for k in heads:
        cells = [f"{e:.1f} / {100 * a:.1f}%" for e, a in zip(d[k]["log_evidence"], d[k]["test_accuracy"])]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    val = [v for v in d["val_accuracy"] if v is not None]
    lines.append("")
    lines.append(f"Learned at N = {d['width']}, T = {d['T']}: {d['steps']} Adam steps (lr {d['lr']}), "
                 f"{d['seconds']:.0f} s; ln Z (E1) {d['log_evidence'][0]:.2f} → {max(d['log_evidence']):.2f} "
                 f"(best step {d['best_step']}); validation accuracy {100 * val[0]:.1f}% → {100 * val[-1]:.1f}%; "
                 f"{d['message']}. ln Z is the saddle-point log evidence (E1) at each width; accuracy = theory "
                 f"predictor on {1000 if d['P'] == 100 else 'the'} test sequences.")
    return "\n".join(lines) + "\n"
