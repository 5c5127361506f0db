"""Issue 16 targets evaluated on the recovery and gap JSONs (docs/figures/potts_recovery.json, potts_gap.json)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _potts_common import fmt_ms, load, table  # noqa: E402


def render() -> str:
    res = load("potts_recovery.json")
    if not res:
        return "_not run_\n"
    rows = res["rows"]
    fa = {(r["ensemble"], r["D_target"], r["M"], r["seed"]): r for r in rows if r["model"] == "FA"}
    pl = {(r["ensemble"], r["D_target"], r["M"], r["seed"]): r for r in rows if r["model"] == "plmDCA"}
    both = sorted(set(fa) & set(pl))
    wins = [k for k in both if fa[k]["corr_K"] >= pl[k]["corr_K"]]
    wins_eps = [k for k in both if fa[k]["eps_J"] <= pl[k]["eps_J"]]
    losses = [f"{k[0]} D={k[1]} M={k[2]} seed {k[3]}" for k in both if k not in wins]
    cell = [fa[k]["corr_K"] for k in fa if k[0] == "G2+fields" and k[1] == 0.7 and k[2] == 3000]
    cell_pl = [pl[k]["corr_K"] for k in pl if k[0] == "G2+fields" and k[1] == 0.7 and k[2] == 3000]
    Ms = sorted({k[2] for k in both})
    out = [
        [
            "FA >= plmDCA in corr_K, every (ensemble, D, M, seed) fitted",
            f"{len(wins)}/{len(both)} cells" + ("" if not losses else " (not: " + "; ".join(losses) + ")"),
            "PASS" if both and len(wins) == len(both) else "FAIL",
        ],
        [
            "FA <= plmDCA in eps_J, same cells",
            f"{len(wins_eps)}/{len(both)} cells",
            "PASS" if both and len(wins_eps) == len(both) else "FAIL",
        ],
        [
            "corr_K >= 0.9 at D ~ 0.7, M = 3000, with fields (FA)",
            (fmt_ms(cell) + f" over {len(cell)} seeds (min {min(cell):.3f}); plmDCA " + fmt_ms(cell_pl))
            if cell
            else "not run",
            ("PASS on the mean" if cell and sum(cell) / len(cell) >= 0.9 else "FAIL on the mean")
            + f"; {sum(c >= 0.9 for c in cell)}/{len(cell)} seeds >= 0.9",
        ],
        [
            "M grid {1k, 3k, 10k, 30k} x 2 ensembles x 2 D x 3 seeds, FA and plmDCA",
            f"fitted: M = {', '.join(str(m) for m in Ms)}; {len(both)} of 48 cells with both models",
            "PASS" if Ms == [1000, 3000, 10000, 30000] and len(both) == 48 else "NOT DONE",
        ],
    ]
    return table(["target", "measured", "status"], out)
