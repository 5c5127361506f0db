"""Bayesian factored attention: calibration of the pseudo-posterior's credible intervals on data
from known couplings (docs/potts.md §11.1).

Two problems.  (a) L = C = 3 with fields, exact samples (enumeration), ``--reps`` data sets of
M = 300 and of M = 3000: NUTS at omega = 1 and at the magnitude-adjusted omega (``sandwich_omega``),
and the omega = 1 draws after the open-faced sandwich adjustment (``curvature_adjustment``);
pooled coverage of the nominal 90 % intervals of the gauged couplings with its binomial error and
its between-data-set error.  (b) L = C = 20, G2 + consensus fields (made here with the slow test's
settings, or ``--data20`` FILE), FA with fields, NUTS (one chain, ``--warmup``/``--draws``) under
the same three rules; coverage of couplings (all rules) and fields (adjusted).  The
pseudo-posterior is not the posterior of the Potts model (see ``bayes_attn.potts._bayes``).
Writes OUTDIR/potts_bayes.json; docs/potts_results.md section 4 is generated from it.

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
from bayes_attn.potts_bayes import PseudoPosterior

SCALE_B = 3.0


def small_problem(rep: int, M: int, L: int = 3, C: int = 3):
    """Known G1 couplings (x2) with consensus + noise fields and M exact samples."""
    J, U = pt.generate_couplings("G1", L, C, seed=100 + rep)
    h, _ = pt.generate_fields(L, C, 100 + rep, field_sigma=0.5, consensus=0.5)
    m = pt.Potts(2 * J, U, 1.0, h)
    st, p = pt.exact_distribution(m)
    return m, st[np.random.default_rng(rep).choice(len(p), M, p=p)]


RULES = ("omega1", "magnitude", "curvature")


def calibrate_small(reps: int, M: int = 300, warmup: int = 150, draws: int = 300, rules=RULES):
    """Pooled coverage at L = C = 3 over ``reps`` data sets for each rule: ``omega1`` (the raw
    pseudo-posterior), ``magnitude`` (NUTS at the scalar omega of ``sandwich_omega``), ``curvature``
    (the omega = 1 draws after the open-faced sandwich adjustment, ``curvature_adjustment``)."""
    L = C = 3
    post = PseudoPosterior(L, C, scale_b=SCALE_B, chains=1, warmup=warmup, draws=draws, max_tree_depth=6)
    # the chains see every one of the C**L states once, weighted by its count in the data: the same
    # pseudo-posterior as the M sequences (docs/potts.md (11.1a)) at a gradient cost of 27 rows, not M
    states = pt.all_states(L, C)
    per = {w: [] for w in rules}
    oms = []
    for r in range(reps):
        m, s = small_problem(r, M)
        counts = np.bincount(pt.state_index(s, C), minlength=len(states))
        fp, _ = pt.fit_lbfgs(
            jax.random.PRNGKey(r),
            s,
            pt.FAConfig(L, C, bias=True),
            pt.map_lambda(M, L),
            tol=1e-9,
            lam_fields=pt.map_lambda(M, L, scale=SCALE_B),
        )
        if "magnitude" in rules:
            om = pt.sandwich_omega(s, fp, scale_b=SCALE_B)
            oms.append(om["omega"])
            out = post.run(jax.random.PRNGKey(1000 + r), states, init=fp, omega=om["omega"], weights=counts)
            per["magnitude"].append(pt.coverage(out["K0"], m.beta, m.J, m.U))
        if {"omega1", "curvature"} & set(rules):
            out = post.run(jax.random.PRNGKey(1000 + r), states, init=fp, omega=1.0, weights=counts)
            if "omega1" in rules:
                per["omega1"].append(pt.coverage(out["K0"], m.beta, m.J, m.U))
            if "curvature" in rules:
                adj = pt.curvature_adjustment(s, fp, scale_b=SCALE_B)
                per["curvature"].append(pt.coverage(pt.adjust_draws(out, adj)["K0"], m.beta, m.J, m.U))
    return {
        "L": L,
        "C": C,
        "M": M,
        "reps": reps,
        "warmup": warmup,
        "draws": draws,
        "omegas": oms,
        "coverage": {w: pt.pool_coverage(v) for w, v in per.items()},
    }


LARGE = dict(
    L=20,
    C=20,
    consensus=1.0,
    field_sigma=0.5,
    beta=1.5,
    n_val=10,
    n_test=10,
    rungs=6,
    systems=500,
    burn_sweeps=300,
    check_other=False,
)


def run_large(path, M: int, warmup: int, draws: int):
    """L = C = 20: from ``path`` (a ``potts sample`` file) or, without one, data made here with
    the slow test's settings (G2 + consensus fields, beta 1.5).  NUTS at omega = 1 and at the
    magnitude-adjusted omega; the omega = 1 draws also after the curvature adjustment."""
    if path:
        d = np.load(path)
        s = d["sequences"][:M]
    else:
        d = pt.make_dataset(pt.SampleConfig(M=M, **LARGE))
        s = d["sequences"]
    m = pt.Potts(d["J"], d["U"], float(d["beta"]), d["h"])
    L, C = m.L, m.C
    fp, info = pt.fit_lbfgs(
        jax.random.PRNGKey(0),
        s,
        pt.FAConfig(L, C, bias=True),
        pt.map_lambda(M, L),
        lam_fields=pt.map_lambda(M, L, scale=SCALE_B),
    )
    om = pt.sandwich_omega(s, fp, scale_b=SCALE_B)
    adj = pt.curvature_adjustment(s, fp, scale_b=SCALE_B)
    t1 = time.time()
    post = PseudoPosterior(L, C, scale_b=SCALE_B, chains=1, warmup=warmup, draws=draws, max_tree_depth=6)
    raw = post.run(jax.random.PRNGKey(1), s, init=fp, omega=1.0)
    mag = post.run(jax.random.PRNGKey(1), s, init=fp, omega=om["omega"])
    out = pt.adjust_draws(raw, adj)
    cov = {
        "omega1": pt.coverage(raw["K0"], m.beta, m.J, m.U),
        "magnitude": pt.coverage(mag["K0"], m.beta, m.J, m.U),
        "curvature": pt.coverage(out["K0"], m.beta, m.J, m.U),
    }
    h0 = out["h0"].reshape(-1, L, C)  # fields: the adjusted draws
    t0h = pt.gauge_fields(m.beta * m.h, pt.true_couplings(m.beta, m.J, m.U))
    lo, hi = np.quantile(h0, [0.05, 0.95], axis=0)
    cov_h = float(np.mean((t0h >= lo) & (t0h <= hi)))
    K0m = out["K0"].reshape(-1, L, L, C, C).mean(0)
    return {
        "data": str(path) if path else "made here: " + ", ".join(f"{k}={v}" for k, v in LARGE.items()),
        "L": L,
        "C": C,
        "M": M,
        "beta": m.beta,
        "warmup": warmup,
        "draws": draws,
        "chains": 1,
        "omega": om,
        "map_fit": info._asdict(),
        "coverage_K": cov,
        "coverage_h": {
            "rate": cov_h,
            "n": L * C,
            "n_dof": L * (C - 1),
            "binom_se": float(np.sqrt(cov_h * (1 - cov_h) / (L * (C - 1)))),
        },
        "corr_posterior_mean_K": pt.abs_corr(
            pt.offdiag(K0m), pt.offdiag(pt.zero_sum(pt.true_couplings(m.beta, m.J, m.U)))
        ),
        "ess_K_min": raw["ess_K_min"],
        "divergences": raw["divergences"] + mag["divergences"],
        "nuts_seconds": time.time() - t1,
        "pseudo_posterior": True,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--data20", default=None, help="a potts sample file (default: made here)")
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
    res["small"] = calibrate_small(
        1 if args.smoke else args.reps, warmup=30 if args.smoke else 150, draws=30 if args.smoke else 300
    )
    if not args.smoke:  # the asymptotic regime, where the affine adjustment should be exact
        res["small_large_M"] = calibrate_small(args.reps, M=3000, warmup=150, draws=300)
    pt.atomic_write_json(out / "potts_bayes.json", res)
    for k in ("small", "small_large_M"):
        if k in res:
            print(
                k,
                {w: round(c["rate"], 3) for w, c in res[k]["coverage"].items()},
                f"({time.time() - t0:.0f} s)",
                flush=True,
            )
    if not args.smoke:
        res["large"] = run_large(args.data20, args.M, args.warmup, args.draws)
        print(res["large"]["coverage_K"], res["large"]["coverage_h"], flush=True)
    res["seconds"] = time.time() - t0
    pt.atomic_write_json(out / "potts_bayes.json", res)


if __name__ == "__main__":
    main()
