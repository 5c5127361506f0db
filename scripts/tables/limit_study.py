"""docs/results.md "The limit at fixed alpha": exact order-parameter posterior vs theory, per load and size.

Reads docs/figures/limit_study.json (examples/limit_study.py).
"""

import sys
from math import isfinite
from pathlib import Path
from statistics import mean, pstdev

sys.path.insert(0, str(Path(__file__).parent))
from _common import MissingData, figure, minus, sci, table, width_label  # noqa: E402


def _pm(vals, fmt):
    sd = fmt.lstrip("+")
    return f"{format(mean(vals), fmt)} ± {format(pstdev(vals), sd)}" if len(vals) > 1 else format(vals[0], fmt)


def render() -> str:
    d = figure("limit_study.json", "examples/limit_study.py")
    if not d["rows"]:
        raise MissingData("docs/figures/limit_study.json has no cells: run examples/limit_study.py")
    groups = {}
    for r in d["rows"]:
        groups.setdefault((r["alpha"], r["P"]), []).append(r)
    rows = []
    for (alpha, P), sub in sorted(groups.items()):
        rows.append(
            [
                f"{alpha:g}",
                width_label(P),
                width_label(sub[0]["N"]),
                len(sub),
                f"{100 * mean(r['acc_theory'] for r in sub):.2f}",
                minus(_pm([r["acc_gap_pts"] for r in sub], "+.2f")),
                sci(mean(r["mean_rel_err"] for r in sub)),
                sci(mean(r["mean_rel_mcse"] for r in sub), 1),
                sci(mean(r["U_rel_err"] for r in sub)),
                f"{max(r['max_rhat'] for r in sub):.4f}",
                f"{min(r['min_ess_bulk'] for r in sub):.0f}",
                "PASS" if all(r["verdict"] == "PASS" for r in sub) else "**FAIL**",
            ]
        )
    fits = [
        f"alpha = {f['alpha']:g}: <f> ~ N^({minus(format(f['f_slope'], '.2f'))} ± {f['f_se']:.2f}), "
        f"U ~ N^({minus(format(f['U_slope'], '.2f'))} ± {f['U_se']:.2f}) ({f['points']} cells)"
        if isfinite(f["f_slope"]) and isfinite(f["U_slope"])
        else f"alpha = {f['alpha']:g}: no slope yet ({f['points']} cells, one size)"
        for f in d["fits"]
    ]
    g = d["gates"]
    return (
        f"{d['task']}, {d['n_test']} test inputs; NUTS, {d['chains']} chains x ({d['warmup']} warm-up + "
        f"{d['draws']} draws), start `{d['init']}`. Means over the seeds; the accuracy gap as mean ± s.d. "
        f"Verdict PASS: every seed's chains converged (max R-hat < {g['rhat_max']}, min bulk ESS > "
        f"{g['ess_bulk_min']}, no divergence) and its saddle point converged.\n\n"
        + table(
            [
                "alpha",
                "P",
                "N",
                "seeds",
                "theory acc. (%)",
                "acc. gap (pts)",
                "<f> rel. err.",
                "MC floor",
                "U rel. err.",
                "max R-hat",
                "min ESS",
                "verdict",
            ],
            rows,
        )
        + "\nFitted log-log slopes against N (least squares over sizes and seeds, ± one standard error):\n\n"
        + "\n".join(f"* {line}" for line in fits)
        + "\n"
    )
