"""Recovery table: FA vs plmDCA per (ensemble, D, M), mean ± s.e. over data seeds (docs/figures/potts_recovery.json)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _potts_common import fmt_ms, load, table  # noqa: E402


def render() -> str:
    res = load("potts_recovery.json")
    if not res:
        return "_not run: docs/figures/potts_recovery.json is missing_\n"
    rows = res["rows"]
    keys = sorted({(r["ensemble"], r["D_target"], r["M"]) for r in rows})
    out = []
    for ens, D, M in keys:
        sel = {
            m: [r for r in rows if (r["ensemble"], r["D_target"], r["M"], r["model"]) == (ens, D, M, m)]
            for m in ("FA", "plmDCA")
        }
        fa, pl = sel["FA"], sel["plmDCA"]
        seeds = sorted({r["seed"] for r in fa} & {r["seed"] for r in pl})
        wins = sum(
            next(a for a in fa if a["seed"] == s)["corr_K"] >= next(b for b in pl if b["seed"] == s)["corr_K"]
            for s in seeds
        )
        lams = ", ".join(f"{x:g}" for x in sorted({r["lam"] for r in fa}))
        out.append(
            [
                ens,
                D,
                M,
                len(fa),
                fmt_ms([r["corr_K"] for r in fa]),
                fmt_ms([r["corr_K"] for r in pl]),
                fmt_ms([r["eps_J"] for r in fa]),
                fmt_ms([r["eps_J"] for r in pl]),
                fmt_ms([r["corr_h"] for r in fa]) if fa and "corr_h" in fa[0] else "-",
                fmt_ms([r["corr_h"] for r in pl]) if pl and "corr_h" in pl[0] else "-",
                f"{wins}/{len(seeds)}",
                lams,
                fmt_ms([r["gap"] for r in fa], 4),
            ]
        )
    return table(
        [
            "ensemble",
            "D target",
            "M",
            "seeds",
            "FA corr_K",
            "plmDCA corr_K",
            "FA eps_J",
            "plmDCA eps_J",
            "FA corr_h",
            "plmDCA corr_h",
            "FA >= plmDCA (corr_K, seeds)",
            "FA lambda (val.)",
            "FA test gap (nats)",
        ],
        out,
    )
