"""Data sets of the recovery experiment: beta, D, equilibration (docs/figures/potts_recovery.json)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _potts_common import load, table  # noqa: E402


def render() -> str:
    res = load("potts_recovery.json")
    if not res or "datasets" not in res:
        return "_not run_\n"
    out = []
    for d in res["datasets"]:
        out.append(
            [
                d["ensemble"],
                d["D_target"],
                d["seed"],
                f"{d['beta']:.4f}",
                f"{d['D_tune']:.3f}",
                f"{d['D_sample']:.3f} ± {d['D_se']:.3f}",
                f"{d['energy_per_site']:.3f}",
                f"{d['rhat_energy']:.4f}",
                f"{d['swap_acc_min']:.2f}",
                f"{d['round_trips_mean']:.1f}",
                "PASS" if d["passed"] else "FAIL: " + "; ".join(d["failures"]),
                f"{d['sample_seconds']:.0f}" if d.get("sample_seconds") else "-",
            ]
        )
    return table(
        [
            "ensemble",
            "D target",
            "data seed",
            "beta (bisected)",
            "D at tuning",
            "D of the sample (± s.e.)",
            "energy/site",
            "R-hat(E)",
            "min swap acc.",
            "round trips",
            "gates",
            "PT seconds",
        ],
        out,
    )
