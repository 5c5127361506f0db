"""Replica / deterministic-equivalent theory vs simulation in the Gaussian-spin ridge scenario
(docs/potts.md §9.2): the interpolation-peak figure and the validation table at alpha in {0.5, 2, 4}.

    python examples/potts_replica.py OUTDIR [--curves-only]
    python examples/potts_replica.py --smoke      # tiny (L=40, few alphas), for tests/test_examples.py
"""

import json
import sys
from pathlib import Path

import numpy as np

import bayes_attn  # noqa: F401
from bayes_attn import potts as pt


def main(outdir, curves_only=False, smoke=False):
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    L = 40 if smoke else 200
    teacher = pt.gaussian_teacher(L, 3.0, seed=0)
    rows = []
    for alpha in () if curves_only else ((2.0,) if smoke else (0.5, 2.0, 4.0)):
        for lam in (1e-3, 1e-1):
            r = pt.simulate_ridge(teacher, range(3 if smoke else 10), int(round(alpha * (L - 1))), lam,
                                  reps=2 if smoke else 20, seed=7)
            r.update(alpha=alpha, lam=lam,
                     rel_dev_coupling=r["rel_coupling_error"] / r["theory_rel_coupling_error"] - 1,
                     rel_dev_test=r["test_mse"] / r["theory_test_mse"] - 1)
            rows.append(r)
            print(json.dumps(r), flush=True)
    if rows:
        (outdir / "replica_table.json").write_text(json.dumps(rows, indent=1))
    alphas = [0.5, 2.0] if smoke else [0.25, 0.5, 0.75, 0.95, 1.05, 1.5, 2.0, 3.0, 4.0, 5.0]
    curves = pt.replica_curves(teacher, alphas, [1e-2] if smoke else [1e-4, 1e-2, 1e-1],
                               sites=3 if smoke else 10, reps=2 if smoke else 4, seed=11)
    np.savez(outdir / "replica_curves.npz", **curves)
    pt.plot_replica(curves, outdir / "potts_replica.png")


if __name__ == "__main__":
    if "--smoke" in sys.argv:
        main("replica_smoke", smoke=True)
    else:
        main(sys.argv[1], curves_only="--curves-only" in sys.argv)
