"""Replica validation table (docs/figures/potts_replica.json): theory vs simulation over 5 seeds."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _potts_common import load, table  # noqa: E402


def render() -> str:
    res = load("potts_replica.json")
    if not res:
        return "_not run: docs/figures/potts_replica.json is missing_\n"
    out = []
    for r in res["table"]:
        out.append(
            [
                r["alpha"],
                f"{r['lam']:g}",
                f"{r['theory_rel_coupling_error']:.3f} / {r['rel_coupling_error']:.3f} ± "
                f"{r['rel_coupling_error_se_seeds']:.3f}",
                f"{100 * r['rel_dev_rel_coupling_error']:+.1f}%",
                f"{r['z_rel_coupling_error']:+.1f}",
                f"{r['theory_test_mse']:.4f} / {r['test_mse']:.4f} ± {r['test_mse_se_seeds']:.4f}",
                f"{100 * r['rel_dev_test_mse']:+.1f}%",
                f"{r['z_test_mse']:+.1f}",
            ]
        )
    head = (
        f"L = {res['L']}, nu = {res['nu']}, {res['sites']} sites, {res['seeds']} simulation seeds x "
        f"{res['reps_per_seed']} training sets; ± = s.e. over seeds; z = (simulation - theory) / s.e.\n\n"
    )
    return head + table(
        [
            "alpha",
            "lambda",
            "rel. coupling error: theory / simulation",
            "dev.",
            "z",
            "test MSE: theory / simulation",
            "dev.",
            "z",
        ],
        out,
    )
