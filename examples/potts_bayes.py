"""Bayesian factored attention: calibration of the pseudo-posterior's credible intervals on data
from known couplings (docs/potts.md §11.1; issue 16 item 6).

Two problems.  (a) L = C = 3 with fields, exact samples (enumeration), ``--reps`` data sets of
M = 300: NUTS at omega = 1 and at the magnitude-adjusted omega (``sandwich_omega``); pooled
coverage of the nominal 90 % intervals of the gauged couplings with its binomial error.
(b) L = C = 20: the recovery example's G2+fields data at D ~ 0.7 (data seed 0, first ``--M``
training sequences), FA-free with fields, NUTS (one chain, ``--warmup``/``--draws``) at the
adjusted omega; coverage of couplings and fields.  The pseudo-posterior is not the posterior
of the Potts model (see ``bayes_attn.potts._bayes``).  Writes OUTDIR/potts_bayes.json.

    python examples/potts_bayes.py OUTDIR [--data20 DATA.npz] [--M 1000] [--reps 8]
    python examples/potts_bayes.py --smoke
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax
import numpy as np

import bayes_attn  # noqa: F401
from bayes_attn import potts as pt

SCALE_B = 3.0


def small_problem(rep: int, M: int, L: int = 3, C: int = 3):
    """Known G1 couplings (x2) with consensus + noise fields and M exact samples."""
    J, U = pt.generate_couplings("G1", L, C, seed=100 + rep)
    h, _ = pt.generate_fields(L, C, 100 + rep, field_sigma=0.5, consensus=0.5)
    m = pt.Potts(2 * J, U, 1.0, h)
    st, p = pt.exact_distribution(m)
    return m, st[np.random.default_rng(rep).choice(len(p), M, p=p)]


def calibrate_small(reps: int, M: int = 300, warmup: int = 150, draws: int = 300, omegas=("1", "adjusted")):
    """Pooled coverage at L = C = 3 over ``reps`` data sets for each omega rule."""
    L = C = 3
    post = pt.PseudoPosterior(L, C, scale_b=SCALE_B, chains=1, warmup=warmup, draws=draws, max_tree_depth=6)
    per = {w: [] for w in omegas}
    oms = []
    for r in range(reps):
        m, s = small_problem(r, M)
        fp, _ = pt.fit_lbfgs(jax.random.PRNGKey(r), s, pt.FAConfig(L, C, bias=True), pt.map_lambda(M, L), tol=1e-9)
        om = pt.sandwich_omega(s, fp, scale_b=SCALE_B)
        oms.append(om["omega"])
        for w in omegas:
            out = post.run(jax.random.PRNGKey(1000 + r), s, init=fp, omega=1.0 if w == "1" else om["omega"])
            per[w].append(pt.coverage(out["K0"], m.beta, m.J, m.U))
    return {"L": L, "C": C, "M": M, "reps": reps, "warmup": warmup, "draws": draws, "omegas": oms,
            "coverage": {w: pt.pool_coverage(v) for w, v in per.items()}}


def run_large(path, M: int, warmup: int, draws: int):
    d = np.load(path)
    s = d["sequences"][:M]
    m = pt.Potts(d["J"], d["U"], float(d["beta"]), d["h"])
    L, C = m.L, m.C
    t0 = time.time()
    fp, info = pt.fit_lbfgs(jax.random.PRNGKey(0), s, pt.FAConfig(L, C, bias=True), pt.map_lambda(M, L))
    om = pt.sandwich_omega(s, fp, scale_b=SCALE_B)
    t1 = time.time()
    out = pt.PseudoPosterior(L, C, omega=om["omega"], scale_b=SCALE_B, chains=1, warmup=warmup, draws=draws,
                             max_tree_depth=6, progress_bar=False).run(jax.random.PRNGKey(1), s, init=fp)
    cov = pt.coverage(out["K0"], m.beta, m.J, m.U)
    h0 = out["h0"].reshape(-1, L, C)
    t0h = pt.gauge_fields(m.beta * m.h, pt.true_couplings(m.beta, m.J, m.U))
    lo, hi = np.quantile(h0, [0.05, 0.95], axis=0)
    cov_h = float(np.mean((t0h >= lo) & (t0h <= hi)))
    K0m = out["K0"].reshape(-1, L, L, C, C).mean(0)
    return {"data": str(path), "L": L, "C": C, "M": M, "beta": m.beta, "warmup": warmup, "draws": draws,
            "chains": 1, "omega": om, "map_fit": info._asdict(), "coverage_K": cov,
            "coverage_h": {"rate": cov_h, "n": L * C, "n_dof": L * (C - 1),
                           "binom_se": float(np.sqrt(cov_h * (1 - cov_h) / (L * (C - 1))))},
            "corr_posterior_mean_K": pt.abs_corr(pt.offdiag(K0m), pt.offdiag(pt.zero_sum(
                pt.true_couplings(m.beta, m.J, m.U)))),
            "ess_K_min": out["ess_K_min"], "divergences": out["divergences"], "nuts_seconds": time.time() - t1,
            "pseudo_posterior": True}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--data20", default="/tmp/potts_recovery_data/data_G2+fields_D0.7_s0.npz")
    ap.add_argument("--M", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--draws", type=int, default=150)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    if args.smoke:
        args.outdir = args.outdir or "bayes_smoke"
    if args.outdir is None:
        ap.error("OUTDIR is required (or --smoke)")
    out = Path(args.outdir)
    res = {"note": "pseudo-posterior (omega * log PL), not the Bayesian posterior of the Potts model"}
    t0 = time.time()
    res["small"] = calibrate_small(1 if args.smoke else args.reps, warmup=30 if args.smoke else 150,
                                   draws=30 if args.smoke else 300)
    pt.atomic_write_json(out / "potts_bayes.json", res)
    print({w: c["rate"] for w, c in res["small"]["coverage"].items()}, f"({time.time() - t0:.0f} s)", flush=True)
    if not args.smoke:
        res["large"] = run_large(args.data20, args.M, args.warmup, args.draws)
        print(res["large"]["coverage_K"], res["large"]["coverage_h"], flush=True)
    res["seconds"] = time.time() - t0
    pt.atomic_write_json(out / "potts_bayes.json", res)


if __name__ == "__main__":
    main()
