"""Replica / deterministic-equivalent theory vs simulation in the Gaussian-spin ridge scenario
(docs/potts.md §9.2): the interpolation-peak figure and the validation table at alpha in {0.5, 2, 4}.

Table: every (alpha, lambda) simulated with 5 simulation seeds (independent training-set streams,
4 training sets x 10 sites each); the simulation column is the mean over seeds with the s.e.
over seeds.  Figure: 5 training sets per point (s.e. over sites x training sets).  Writes
OUTDIR/potts_replica.json (table + figure points), potts_replica.png, replica_curves.npz.

    python examples/potts_replica.py OUTDIR [--curves-only]
    python examples/potts_replica.py --smoke      # tiny (L=40, few alphas), for the tests
"""

import sys
from pathlib import Path

import numpy as np

import bayes_attn  # noqa: F401
from bayes_attn import potts as pt

SEEDS = 5


def main(outdir, curves_only=False, smoke=False):
    outdir = Path(outdir)
    L = 40 if smoke else 200
    sites = 3 if smoke else 10
    teacher = pt.gaussian_teacher(L, 3.0, seed=0)
    res = {"L": L, "nu": 3.0, "sites": sites, "seeds": SEEDS, "reps_per_seed": 2 if smoke else 4, "table": []}
    for alpha in () if curves_only else ((2.0,) if smoke else (0.5, 2.0, 4.0)):
        for lam in (1e-3, 1e-1):
            M = int(round(alpha * (L - 1)))
            per = [
                pt.simulate_ridge(teacher, range(sites), M, lam, reps=res["reps_per_seed"], seed=100 + k)
                for k in range(SEEDS)
            ]
            row = {"alpha": alpha, "lam": lam, "M": M}
            for q in ("rel_coupling_error", "test_mse"):
                v = np.array([r[q] for r in per])
                row[q] = float(v.mean())
                row[q + "_se_seeds"] = float(v.std(ddof=1) / np.sqrt(SEEDS))
                row["theory_" + q] = per[0]["theory_" + q]
                row["rel_dev_" + q] = row[q] / row["theory_" + q] - 1
                row["z_" + q] = (row[q] - row["theory_" + q]) / row[q + "_se_seeds"]
            row["per_seed"] = [{k: r[k] for k in ("rel_coupling_error", "test_mse")} for r in per]
            res["table"].append(row)
            print(
                f"alpha {alpha} lam {lam:g}: coupling {row['rel_coupling_error']:.4f} +- "
                f"{row['rel_coupling_error_se_seeds']:.4f} (theory {row['theory_rel_coupling_error']:.4f})",
                flush=True,
            )
    alphas = [0.5, 2.0] if smoke else [0.25, 0.5, 0.75, 0.95, 1.05, 1.5, 2.0, 3.0, 4.0, 5.0]
    curves = pt.replica_curves(
        teacher, alphas, [1e-2] if smoke else [1e-4, 1e-2, 1e-1], sites=sites, reps=2 if smoke else SEEDS, seed=11
    )
    res["figure"] = {
        "labels": curves["labels"].tolist(),
        "alphas": curves["alphas"].tolist(),
        "simulation_mean_se": curves["simulation"].tolist(),
        "simulation_theory": curves["simulation_theory"].tolist(),
        "training_sets_per_point": 2 if smoke else SEEDS,
    }
    pt.atomic_savez(outdir / "replica_curves.npz", **curves)
    pt.plot_replica(curves, outdir / "potts_replica.png")
    pt.atomic_write_json(outdir / "potts_replica.json", res)


if __name__ == "__main__":
    if "--smoke" in sys.argv:
        main("replica_smoke", smoke=True)
    else:
        main(sys.argv[1], curves_only="--curves-only" in sys.argv)
