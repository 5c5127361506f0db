"""Figure: coupling recovery |corr(A_sym, J)| of FA-free vs M at fixed couplings and beta (docs/potts.md §6).

Tests the information-limit reading of results.md "Potts §3": at D = 0.3 (ordered phase) the
conditionals are learnt long before the individual couplings.  Extra training sequences are
drawn from the same model (same J, U, beta; PT, `equilibrium_samples`) and appended to
DATA.npz's training set; FA-free (1 head, L-BFGS) is fitted at every M for every lambda and the
lambda with the best validation PL is kept.  If the estimation noise of A is ~1/M around a
fixed signal, corr^2 = 1 / (1 + k / M); k is fitted by least squares on 1/corr^2 - 1 vs 1/M,
and the M needed for a target |corr| is reported.  Writes OUTDIR/potts_recovery_vs_M.json/.png.

    python examples/potts_recovery_vs_M.py DATA.npz OUTDIR [--Ms 3000 10000 30000] [--lams 1e-4 1e-5]
    python examples/potts_recovery_vs_M.py --smoke    # tiny data (L=5, C=3) made here, for tests
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import numpy as np

import bayes_attn  # noqa: F401
from bayes_attn import potts as pt


def information_limit(Ms, corrs):
    """Least-squares k of ``1/corr^2 - 1 = k / M`` (through the origin)."""
    x, y = 1.0 / np.asarray(Ms, float), 1.0 / np.asarray(corrs, float) ** 2 - 1.0
    return float(x @ y / (x @ x))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?")
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--Ms", type=int, nargs="+", default=[3000, 10000, 30000])
    ap.add_argument("--lams", type=float, nargs="+", default=[1e-4, 1e-5])
    ap.add_argument("--systems", type=int, default=300, help="PT systems for the extra sequences")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--target", type=float, default=0.99, help="|corr| whose M is extrapolated")
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    if args.smoke:
        from potts_gap_table import make_smoke_data

        args.data, args.outdir, args.Ms, args.lams, args.systems = make_smoke_data(), "recovery_smoke", [100, 400], \
            [1e-3], 20
    if args.data is None or args.outdir is None:
        ap.error("DATA.npz and OUTDIR are required (or --smoke)")
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    d = np.load(args.data)
    tr, va, te = d["sequences"], d["val_sequences"], d["test_sequences"]
    model = pt.Potts(d["J"], d["U"], float(d["beta"]))
    L, C = model.L, model.C
    t0 = time.time()
    n_extra = max(args.Ms) - len(tr)
    extra = np.zeros((0, L), tr.dtype)
    report = None
    if n_extra > 0:
        burn = 50 if args.smoke else 1000
        extra, report = pt.equilibrium_samples(jax.random.PRNGKey(args.seed), model.J, model.U, model.h, model.beta,
                                               n_extra, systems=args.systems, burn_sweeps=burn, thin=10,
                                               check_other=False)
        print(f"{n_extra} extra sequences ({time.time() - t0:.0f} s): D {pt.hamming_distance(extra, C):.3f} "
              f"(training set {pt.hamming_distance(tr, C):.3f}); equilibration "
              f"{'PASS' if report.passed else 'FAIL ' + '; '.join(report.failures)}", flush=True)
    seqs = np.concatenate([tr, extra.astype(tr.dtype)])
    nll_star = pt.nll_star(model, te)
    rows = []
    for M in args.Ms:
        best = None
        for lam in args.lams:
            p, info = pt.fit_lbfgs(jax.random.PRNGKey(3), seqs[:M], pt.FAConfig(L, C), lam)
            A, V = np.asarray(p["A"][0]), np.asarray(p["V"][0])
            row = {"M": M, "lam": lam, "val_nll": float(pt.pl_loss(p, va)),
                   "gap": float(pt.pl_loss(p, te)) - nll_star,
                   "eps_J": pt.coupling_error(np.asarray(pt.fa_couplings(p)), model.beta, model.J, model.U),
                   **pt.factor_recovery(0.5 * (A + A.T), V, model.J, model.U), "converged": bool(info.converged),
                   "grad_norm": float(info.grad_norm), "iterations": int(info.iterations),
                   "seconds": round(time.time() - t0, 1)}
            print(json.dumps(row), flush=True)
            if best is None or row["val_nll"] < best["val_nll"]:
                best = row
        rows.append(best)
    k = information_limit([r["M"] for r in rows], [r["corr_A_J"] for r in rows])
    M_target = k / (1.0 / args.target ** 2 - 1.0)
    res = {"beta": model.beta, "D_train": pt.hamming_distance(tr, C), "nll_star": nll_star, "rows": rows,
           "k": k, "target_corr": args.target, "M_for_target": M_target,
           "extra_equilibration_passed": None if report is None else bool(report.passed)}
    (out / "potts_recovery_vs_M.json").write_text(json.dumps(res, indent=1, default=float))
    print(f"k = {k:.0f}: |corr| = {args.target} needs M ~ {M_target:.0f}")
    plot(res, out / "potts_recovery_vs_M.png")


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    Ms = np.array([r["M"] for r in res["rows"]], float)
    grid = np.geomspace(Ms.min() / 2, max(res["M_for_target"], Ms.max()) * 1.5, 200)
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    ax.plot(Ms, [r["corr_A_J"] for r in res["rows"]], "o", label="FA-free fit, |corr(A_sym, J)|")
    ax.plot(Ms, [r["corr_V_U"] for r in res["rows"]], "s", label="FA-free fit, |corr(V0, U0)|")
    ax.plot(grid, 1 / np.sqrt(1 + res["k"] / grid), "-", lw=1, label=f"1/sqrt(1 + k/M), k = {res['k']:.0f}")
    ax.axhline(res["target_corr"], ls=":", color="k", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("M (training sequences)")
    ax.set_ylabel("|corr|")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"coupling recovery at D = {res['D_train']:.2f}, beta = {res['beta']:.3f}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
