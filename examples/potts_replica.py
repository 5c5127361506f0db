"""Replica / deterministic-equivalent theory vs simulation in the Gaussian-spin ridge scenario
(docs/potts.md §9.2): the interpolation-peak figure and the validation table at alpha in {0.5, 2, 4}.

    python examples/potts_replica.py OUTDIR
"""

import json
import sys
from pathlib import Path

import numpy as np

import bayes_attn  # noqa: F401
from bayes_attn import potts as pt


def main(outdir, curves_only=False):
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    teacher = pt.gaussian_teacher(200, 3.0, seed=0)
    rows = []
    for alpha in () if curves_only else (0.5, 2.0, 4.0):
        for lam in (1e-3, 1e-1):
            r = pt.simulate_ridge(teacher, range(10), int(round(alpha * 199)), lam, reps=20, seed=7)
            r.update(alpha=alpha, lam=lam,
                     rel_dev_coupling=r["rel_coupling_error"] / r["theory_rel_coupling_error"] - 1,
                     rel_dev_test=r["test_mse"] / r["theory_test_mse"] - 1)
            rows.append(r)
            print(json.dumps(r), flush=True)
    if rows:
        (outdir / "replica_table.json").write_text(json.dumps(rows, indent=1))
    curves = pt.replica_curves(teacher, [0.25, 0.5, 0.75, 0.95, 1.05, 1.5, 2.0, 3.0, 4.0, 5.0],
                               [1e-4, 1e-2, 1e-1], sites=10, reps=4, seed=11)
    np.savez(outdir / "replica_curves.npz", **curves)
    pt.plot_replica(curves, outdir / "potts_replica.png")


if __name__ == "__main__":
    main(sys.argv[1], curves_only="--curves-only" in sys.argv)
