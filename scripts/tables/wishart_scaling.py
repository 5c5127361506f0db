"""docs/wishart.md "Finite-size scaling": exact finite-N posterior mean vs saddle-point theory, per width.

Reads docs/figures/finite_size_scaling.json (examples/finite_size_scaling.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import figure, minus, sci, table, width_label  # noqa: E402


def render() -> str:
    d = figure("finite_size_scaling.json", "examples/finite_size_scaling.py")
    rows = [
        [
            width_label(r["N"]),
            sci(r["gap_rms"]),
            sci(r["mcse_rms"], 1),
            f"{r['rhat_max_f']:.4f}",
            r["divergences"],
            f"{r['wall_s']:.0f}",
            "yes" if r.get("theory_ok", True) else "**no**",
        ]
        for r in d["rows"]
    ]
    n = [r["N"] for r in d["rows"] if r["N"] >= d["fit_min"]]
    return (
        f"P = {d['P']}, T = {d['T']:g}, {d['chains']} chains x ({d['warmup']} warm-up + {d['draws']} draws), "
        f"{d['n_test']} test inputs.\n\n"
        + table(
            [
                "N",
                "gap (RMS)",
                "MC floor (ZV MCSE)",
                f"max R-hat over {d['n_test']} f",
                "divergences",
                "wall s",
                "saddle point ok",
            ],
            rows,
        )
        + f"\n**Fitted log-log slope over N = {width_label(min(n))} … {width_label(max(n))}: "
        f"{minus(format(d['slope'], '.3f'))}**\n"
    )
