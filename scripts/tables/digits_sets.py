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
    out = table(head, rows)
    gated = [(n, s) for n, s in sampled if "gates" in s]
    if gated:  # the package's verdict (diagnostics.summarize) on f and U of every sampled point
        g_rows = []
        for n, s in gated:
            g = s["gates"]
            g_rows.append(
                [
                    n,
                    s["T"],
                    f"{s['chains']} x ({s['warmup']} + {s['draws']} x {s['thinning']})",
                    f"{g['max_rhat']:.4f}",
                    f"{g['min_ess_bulk']:.0f}",
                    f"{g['min_ess_tail']:.0f}",
                    g["divergences"],
                    "**PASS**" if g["passed"] else "**FAIL**: " + "; ".join(g["failures"]),
                    f"{s['seconds']:.0f}",
                ]
            )
        t = gated[0][1]["gates"]["thresholds"]
        rule = (
            f"R-hat < {t['rhat_max']}, bulk and tail ESS > {t['ess_bulk_min']:.0f} / {t['ess_tail_min']:.0f}, "
            f"divergences <= {t['max_divergences']}, E-BFMI >= {t['bfmi_min']}"
        )
        out += "\n" + table(
            [
                "N",
                "T",
                "chains x (warm-up + stored draws x thinning)",
                "max R-hat (f, U, U_a)",
                "min bulk ESS",
                "min tail ESS",
                "divergences",
                f"gates ({rule})",
                "s",
            ],
            g_rows,
        )
    with_u = [(n, s) for n, s in sampled if "U" in s]
    if with_u:  # sampled E[U_1] against the theory's U* (raw units) and the GD network's U (each / its max |entry|)
        u_rows = [
            [
                n,
                f"{u['corr_theory']:.6f}",
                f"{u['rel_frobenius_theory']:.4f}",
                f"{u['max_abs_z_theory']:.1f}",
                f"{u['corr_gd']:.3f}",
                f"{u['corr_theory_gd']:.3f}",
            ]
            for n, u in ((n, s["U"]) for n, s in with_u)
        ]
        out += "\n" + table(
            [
                "N",
                "corr(E[U], U*)",
                "‖E[U] − U*‖ / ‖U*‖",
                "largest abs(E[U] − U*) / MCSE over the upper triangle",
                "corr(E[U], U_GD)",
                "corr(U*, U_GD)",
            ],
            u_rows,
        )
    return out
