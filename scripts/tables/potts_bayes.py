"""Coverage of the pseudo-posterior's 90 % credible intervals (docs/figures/potts_bayes.json)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _potts_common import load, table  # noqa: E402

RULES = {"omega1": "omega = 1", "magnitude": "magnitude-adjusted omega", "curvature": "omega = 1, sandwich-adjusted"}


def _rate(c) -> str:
    between = c.get("between_sets_se")
    extra = f" (between sets ± {between:.3f})" if between is not None and between == between else ""
    return f"**{c['rate']:.3f}** ± {c['binom_se']:.3f}{extra}"


def render() -> str:
    res = load("potts_bayes.json")
    if not res:
        return "_not run: docs/figures/potts_bayes.json is missing_\n"
    out = []
    for key in ("small", "small_large_M"):
        if key not in res:
            continue
        s = res[key]
        for w, c in s["coverage"].items():
            rule = RULES[w]
            if w == "magnitude":
                rule += " (" + ", ".join(f"{x:.2f}" for x in s["omegas"]) + ")"
            out.append(
                [
                    f"L = C = {s['L']}, fields, exact samples",
                    s["M"],
                    c["datasets"],
                    rule,
                    "couplings (i<j)",
                    f"{c['covered']}/{c['n']}",
                    _rate(c),
                    c["n_dof"],
                    f"{s['warmup']}/{s['draws']}",
                ]
            )
    if "large" in res:
        g = res["large"]
        rows = [
            (RULES[w] + (f" ({g['omega']['omega']:.3f})" if w == "magnitude" else ""), "couplings (i<j)", c)
            for w, c in g["coverage_K"].items()
        ]
        rows.append((RULES["curvature"], "fields", g["coverage_h"]))
        for rule, what, c in rows:
            out.append(
                [
                    f"L = C = {g['L']}, G2+fields",
                    g["M"],
                    1,
                    rule,
                    what,
                    f"{c['covered']}/{c['n']}" if "covered" in c else f"-/{c['n']}",
                    _rate(c),
                    c["n_dof"],
                    f"{g['warmup']}/{g['draws']}",
                ]
            )
    return table(
        [
            "problem",
            "M",
            "data sets",
            "rule",
            "quantity",
            "covered",
            "rate ± binomial s.e.",
            "n (dof) for the binomial s.e.",
            "NUTS warm-up/draws",
        ],
        out,
    )
