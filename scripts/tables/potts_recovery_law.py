"""Law fits corr_K^2 = 1/(1 + k/M) per (model, ensemble, D) (docs/figures/potts_recovery.json)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _potts_common import load, table  # noqa: E402


def render() -> str:
    res = load("potts_recovery.json")
    if not res or "laws" not in res:
        return "_not run: docs/figures/potts_recovery.json has no law fits_\n"
    out = []
    for x in res["laws"]:
        k = (
            "-"
            if x["k_mean"] is None
            else (f"{x['k_mean']:.0f}" + ("" if x["k_se"] is None else f" ± {x['k_se']:.0f}"))
        )
        M90 = "-" if not x["k_mean"] else f"{x['k_mean'] / (1 / 0.9**2 - 1):.0f}"
        halves = "-" if x.get("k_small_M") is None else f"{x['k_small_M']:.0f} / {x['k_large_M']:.0f}"
        dev = "-" if x.get("max_abs_dev_corr") is None else f"{x['max_abs_dev_corr']:.3f}"
        out.append(
            [
                x["model"],
                x["ensemble"],
                x["D_target"],
                ", ".join(str(m) for m in x["Ms"]),
                len(x["k_per_seed"]),
                k,
                f"{x['k_pooled']:.0f} ± {x['k_pooled_se']:.0f}",
                halves,
                dev,
                M90,
            ]
        )
    return table(
        [
            "model",
            "ensemble",
            "D target",
            "M fitted",
            "seeds",
            "k (mean ± s.e. over seeds)",
            "k (pooled fit ± s.e.)",
            "k from the smaller / larger half of the Ms",
            "max abs(corr - law) over M",
            "M for corr 0.9 (k mean)",
        ],
        out,
    )
