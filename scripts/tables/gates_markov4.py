"""docs/samplers.md: the gates of the default order-parameter runs over N x T x seed.

Reads docs/figures/gates_markov4.json (scripts/gates.py: the sweep of configs/gates_markov4.toml).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import figure, table  # noqa: E402


def render(name: str = "gates_markov4.json") -> str:
    d = figure(name, "scripts/gates.py")
    cells = d["cells"]
    rows = []
    for N in sorted({c["width"] for c in cells}):
        for T in sorted({c["temperature"] for c in cells}):
            cs = sorted((c for c in cells if c["width"] == N and c["temperature"] == T), key=lambda c: c["seed"])
            if not cs:
                continue
            rows.append(
                [
                    N,
                    T,
                    len(cs),
                    " / ".join(f"{c['max_rhat']:.5f}" for c in cs),
                    " / ".join(f"{c['min_ess_bulk']:.0f}" for c in cs),
                    " / ".join(str(c["divergences"]) for c in cs),
                    " / ".join("PASS" if c["converged"] else "**FAIL**" for c in cs),
                ]
            )
    n_pass = sum(c["converged"] for c in cells)
    t = d["thresholds"]
    return (
        table(["N", "T", "seeds", "max R-hat (per seed)", "min bulk ESS", "divergences", "verdict"], rows)
        + f"\n{n_pass}/{len(cells)} cells PASS (gates: R-hat < {t['rhat_max']}, bulk and tail ESS > "
        f"{t['ess_bulk_min']:.0f}, divergences ≤ {t['max_divergences']}, E-BFMI > {t['bfmi_min']}; "
        f"config `{d['config']}`).\n"
    )
