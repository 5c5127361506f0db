"""Coverage of the pseudo-posterior's 90 % credible intervals (docs/figures/potts_bayes.json)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _potts_common import load, table  # noqa: E402


def render() -> str:
    res = load("potts_bayes.json")
    if not res:
        return "_not run: docs/figures/potts_bayes.json is missing_\n"
    out = []
    s = res["small"]
    for w, c in s["coverage"].items():
        om = "1" if w == "1" else "sandwich-adjusted (" + ", ".join(f"{x:.2f}" for x in s["omegas"]) + ")"
        out.append([f"L = C = {s['L']}, fields, exact samples", s["M"], c["datasets"], om, "couplings (i<j)",
                    f"{c['covered']}/{c['n']}", f"**{c['rate']:.3f} ± {c['binom_se']:.3f}**", c["n_dof"],
                    f"{s['warmup']}/{s['draws']}"])
    if "large" in res:
        g = res["large"]
        for what, c in (("couplings (i<j)", g["coverage_K"]), ("fields", g["coverage_h"])):
            out.append([f"L = C = {g['L']}, G2+fields, D ~ 0.7", g["M"], 1, f"{g['omega']['omega']:.3f}", what,
                        f"{c.get('covered', '-')}/{c['n']}" if "covered" in c else f"-/{c['n']}",
                        f"**{c['rate']:.3f} ± {c['binom_se']:.3f}**", c["n_dof"], f"{g['warmup']}/{g['draws']}"])
    return table(["problem", "M", "data sets", "omega", "quantity", "covered", "rate ± binomial s.e.",
                  "n (dof) for the s.e.", "NUTS warm-up/draws"], out)
