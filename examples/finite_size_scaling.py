"""Finite-size scaling: exact finite-N posterior predictor mean vs the saddle-point theory (docs/wishart.md).

Markov 4-path task (theory.md §9.1; P = 100, T = 0.01).  For every width N the exact posterior
of the order parameters (Wishart chain, theory.md §5.2) is sampled with NUTS (4 chains,
``model = "order_parameters"``); the exact posterior mean of f on every test input is its
Rao–Blackwellised draws averaged with zero-variance control variates
(``bayes_attn.inference._zero_variance``).  The theory mean is the GP predictor at the saddle
point U* (``bayes_attn.theory.solve``, §4.2).  The gap is the RMS over test inputs of
(exact − theory); its log-log slope is fitted over ``N >= --fit-min`` (expected about −1:
the Laplace corrections are O(1/N), theory.md §5.2-§5.3).

Writes ``$FIG_DIR/finite_size_scaling.png`` and ``.json`` (per width: gap, its Monte Carlo
floor, max R-hat over test predictions, divergences, wall time).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", type=int, nargs="+", default=[16, 30, 100, 300, 1000, 3000, 10000, 30000, 100000])
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--fit-min", type=int, default=100, help="smallest N in the slope fit")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (test suite)")
    ap.add_argument(
        "--from-json",
        nargs="+",
        default=None,
        help="no sampling: merge the rows of earlier runs' JSON files (e.g. widths run in parallel), fit, plot",
    )
    args = ap.parse_args(argv)
    if args.smoke:
        args.widths, args.chains, args.warmup, args.draws, args.n_test = [30, 1000], 2, 100, 100, 10
        args.fit_min = 16

    from bayes_attn.inference import request_host_devices

    request_host_devices(args.chains)  # before any JAX operation

    import matplotlib

    matplotlib.use("Agg")
    import arviz as az
    import matplotlib.pyplot as plt
    import numpy as np

    from bayes_attn.inference import SamplerConfig, sample
    from bayes_attn.inference._zero_variance import zero_variance_statistics
    from bayes_attn.tasks import markov_task
    from bayes_attn.theory import predict, solve

    P = 20 if args.smoke else 100
    rows = []
    if args.from_json:
        for path in args.from_json:
            with open(path) as fh:
                rows += json.load(fh)["rows"]
        args.widths = []
    else:
        task = markov_task(P=P, n_test=args.n_test, paths=4)
    U_prev = None
    for N in sorted(args.widths, reverse=True):  # warm-start the theory from the larger width
        spec = task.spec(width=N, temperature=0.01, readout="last")
        sol = solve(spec, task.phi("train", spec), task.y_train, init=U_prev)
        U_prev = sol.Us
        m_th, _ = predict(sol.U, task.phi("train", spec), task.phi("test", spec), task.y_train, spec.temperature)
        m_th = np.asarray(m_th)
        cfg = SamplerConfig(
            model="order_parameters",
            chains=args.chains,
            warmup=args.warmup,
            draws=args.draws,
            seed=args.seed,
            progress_bar=False,
        )
        t0 = time.perf_counter()
        dt = sample(task, spec, cfg)
        wall = time.perf_counter() - t0
        post = dt["posterior"].ds
        rhat = float(np.max(np.asarray(az.rhat(post["f"]))))
        zv = zero_variance_statistics(dt, task, spec, names=("f",))["f"]
        gap = zv["mean"] - m_th
        rows.append(
            {
                "N": N,
                "gap_rms": float(np.sqrt(np.mean(gap**2))),
                "mcse_rms": float(np.sqrt(np.mean(zv["mcse"] ** 2))),
                "gap_rms_plain": float(np.sqrt(np.mean((zv["mean_plain"] - m_th) ** 2))),
                "mcse_rms_plain": float(np.sqrt(np.mean(zv["mcse_plain"] ** 2))),
                "rhat_max_f": rhat,
                "divergences": int(dt["sample_stats"].ds["diverging"].values.sum()),
                "wall_s": wall,
                "theory_ok": bool(sol.status.ok),
            }
        )
        r = rows[-1]
        print(
            f"N={N:>6}  gap={r['gap_rms']:.3e} (MC floor {r['mcse_rms']:.1e}; plain {r['gap_rms_plain']:.2e} "
            f"+- {r['mcse_rms_plain']:.1e})  R-hat max {rhat:.4f}  div {r['divergences']}  {wall:.0f} s "
            f"theory ok={r['theory_ok']}",
            flush=True,
        )
    rows.sort(key=lambda r: r["N"])
    Ns = np.array([r["N"] for r in rows], float)
    gaps = np.array([r["gap_rms"] for r in rows])
    floor = np.array([r["mcse_rms"] for r in rows])
    fit = Ns >= args.fit_min
    slope, icpt = np.polyfit(np.log(Ns[fit]), np.log(gaps[fit]), 1) if fit.sum() >= 2 else (np.nan, np.nan)
    print(f"fitted log-log slope over N >= {args.fit_min}: {slope:.3f} (expected about -1)")

    fig, ax = plt.subplots(figsize=(5.0, 3.8))
    ax.loglog(Ns, gaps, "o-", label="|exact − theory| (RMS over test)")
    ax.loglog(Ns, floor, "x:", color="gray", label="Monte Carlo error (RMS MCSE)")
    if np.isfinite(slope):
        ax.loglog(Ns[fit], np.exp(icpt) * Ns[fit] ** slope, "--", label=f"fit: slope {slope:.2f}")
    ax.set_xlabel("width N")
    ax.set_ylabel("predictor-mean gap")
    ax.set_title(f"Markov 4 paths, P={P}, T=0.01")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out_dir = Path(os.environ.get("FIG_DIR", "docs/figures"))
    out_dir.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_dir / "finite_size_scaling.png", dpi=150)
    with open(out_dir / "finite_size_scaling.json", "w") as fh:
        json.dump(
            {
                "slope": float(slope),
                "fit_min": args.fit_min,
                "P": P,
                "T": 0.01,
                "rows": rows,
                "chains": args.chains,
                "warmup": args.warmup,
                "draws": args.draws,
                "n_test": args.n_test,
            },
            fh,
            indent=1,
        )
    print(f"wrote {out_dir / 'finite_size_scaling.png'}")


if __name__ == "__main__":
    main()
