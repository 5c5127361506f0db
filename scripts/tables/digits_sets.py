"""§2a of docs/results.md: digits accuracy on every episode set (theory per width, GP, sampled point).

Reads docs/figures/digits_accuracy_vs_width.json (examples/digits_accuracy_vs_width.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import figure, pct, table  # noqa: E402

SETS = {"test": "test (base classes)", "novel": "novel classes", "ood_noise": "noisy", "ood_transpose": "transposed"}


def render() -> str:
    d = figure("digits_accuracy_vs_width.json", "examples/digits_accuracy_vs_width.py")
    widths = " / ".join(str(n) for n in d["widths"])
    sampled = sorted(d.get("sampled", {}).items(), key=lambda kv: int(kv[0]))
    rows = []
    for key, name in SETS.items():
        row = [name, " / ".join(pct(a) for a in d["theory"][key]), pct(d["gp"][key])]
        for _, s in sampled:  # sampled points store the test-set accuracy only
            row.append(f"**{pct(s['chain_acc_mean'])} ± {pct(s['chain_acc_sd'], 2)}**" if key == "test" else "")
        rows.append(row)
    head = ["set", f"theory N = {widths} (%)", "GP (%)"] + [f"sampled N = {n} (%)" for n, _ in sampled]
    return table(head, rows)
