"""Table: ``bayes-attn fit-attention`` itself on the Markov 4-path task from random heads (docs/results.md §3.1).

Reads docs/figures/learn_markov_cli.json (the ``BUNDLE.json`` that the CLI writes beside its bundle; inputs from
``examples/learn_attention_markov.py --write-cli``) and, for the hand-built heads' evidence at the same width,
docs/figures/learn_markov_basis.json (the figure run on the same training set).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import figure, pct, table  # noqa: E402


def render() -> str:
    d = figure("learn_markov_cli.json", "bayes-attn fit-attention (docs/results.md §3.1 gives the commands)")
    ref = figure("learn_markov_basis.json", "examples/learn_attention_markov.py --tag _basis")
    s = d["settings"]
    N = s["widths"][0]
    hand = ref["hand"]["log_evidence"][ref["widths"].index(N)]
    ev, val = d["log_evidence"], [v for v in d["val_accuracy"] if v is not None]
    best = d["best_step"]
    rows = [
        [
            f"qk rank {s['rank'][0]}, basis {s['basis_shape'][0]} x {s['basis_shape'][1]}, N = {N}, "
            f"T = {s['temperature']}, {s['optimizer']} lr {s['lr']}",
            f"{ev[0]:.1f} → {ev[best]:.1f} (step {best})",
            f"{hand:.1f}",
            f"{pct(val[0])} → {pct(val[-1])}",
            f"**{pct(d['test_accuracy_initial'])} → {pct(d['test_accuracy_final'])}**",
            d["message"],
        ]
    ]
    return table(
        [
            "fit-attention run",
            "ln Z (E1): start → best",
            "ln Z, hand-built heads",
            "validation acc. (%): start → last check",
            "theory test acc. (%): start → kept (best-step) bundle",
            "message",
        ],
        rows,
    )
