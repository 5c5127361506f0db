"""Figure: exact finite-N log evidence minus the saddle-point log evidence vs N (docs/evidence.md §4).

Markov 4-path task (docs/theory.md §9.1: P = 100, T = 0.01, hand-built heads).  At every width the
saddle-point value (:func:`bayes_attn.theory.log_evidence`, eq. (E1) with its Laplace term) and the exact
value (:func:`bayes_attn.theory.exact_log_evidence`, control-variate importance sampling with its MCSE);
log-log plot of |gap| with the fitted slope (least squares on log|gap| vs log N, weighted by the relative
MCSE, with its standard error).  Writes ``$FIG_DIR/evidence_gap_vs_width.png`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

FIG_DIR = Path(os.environ.get("FIG_DIR", "docs/figures"))


def fit_slope(N, gap, se):
    """Weighted least squares of ln|gap| on ln N: ``(slope, its standard error, intercept)``."""
    x, yv = np.log(N), np.log(np.abs(gap))
    sd = np.maximum(se / np.abs(gap), 1e-3)  # relative MCSE = s.d. of ln|gap|, floored
    w = 1.0 / sd**2
    X = np.stack([np.ones_like(x), x], axis=1)
    cov = np.linalg.inv(X.T @ (X * w[:, None]))
    beta = cov @ X.T @ (w * yv)
    res = yv - X @ beta
    s2 = float(np.sum(w * res**2) / max(len(x) - 2, 1))  # scale by the residual variance (model error)
    return float(beta[1]), float(np.sqrt(cov[1, 1] * max(s2, 1.0))), float(beta[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", type=int, nargs="+", default=[10, 30, 100, 300, 1000, 3000, 10000])
    ap.add_argument("--pairs", type=int, default=8000, help="antithetic pairs per exact evidence")
    ap.add_argument("--temperature", type=float, default=0.01)
    ap.add_argument("--fit-from", type=int, default=30, help="smallest width in the slope fit")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (test suite)")
    args = ap.parse_args(argv)
    import bayes_attn  # noqa: F401  (float64)
    from bayes_attn.tasks import markov_task
    from bayes_attn.theory import exact_log_evidence, log_evidence

    P, n_test = (20, 10) if args.smoke else (100, 1000)
    if args.smoke:
        args.widths, args.pairs, args.fit_from = [10, 100, 1000], 300, 10
    task = markov_task(P, n_test, 4)
    rows = []
    for N in args.widths:
        spec = task.spec(width=N, temperature=args.temperature)
        t0 = time.time()
        sad = log_evidence(task, spec)
        ex = exact_log_evidence(task, spec, n_pairs=args.pairs, seed=N, solution=sad.solution, progress=True)
        rows.append(
            {
                "N": N,
                "log_evidence_saddle": sad.log_evidence,
                "log_evidence_exact": ex.log_evidence,
                "log_evidence_exact_mcse": ex.mcse,
                "gap": ex.log_evidence - sad.log_evidence,
                "laplace_at_exact_mode": ex.laplace_at_mode,
                "ess": ex.ess,
                "n_draws": ex.n_draws,
                "saddle_terms": {k: v for k, v in sad.as_dict().items()},
                "seconds": time.time() - t0,
            }
        )
        print(
            f"N={N}: saddle {sad.log_evidence:.6f} exact {ex.log_evidence:.6f} +- {ex.mcse:.1e} "
            f"gap {rows[-1]['gap']:.3e} (ESS {ex.ess:.0f}, {rows[-1]['seconds']:.1f} s)",
            flush=True,
        )
    N = np.array([r["N"] for r in rows], float)
    gap = np.array([r["gap"] for r in rows])
    se = np.array([r["log_evidence_exact_mcse"] for r in rows])
    sel = N >= args.fit_from
    slope, slope_se, icpt = fit_slope(N[sel], gap[sel], se[sel])
    fig, ax = plt.subplots(figsize=(4.8, 3.6))
    ax.errorbar(N, np.abs(gap), yerr=2 * se, fmt="o", label="|exact - saddle| (2 MCSE bars)")
    ax.plot(N[sel], np.exp(icpt) * N[sel] ** slope, "k--", label=f"fit: slope {slope:.3f} +- {slope_se:.3f}")
    ax.plot(N, se, "s:", color="0.5", label="MCSE of exact")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("log-evidence gap (nats)")
    ax.set_title(f"Markov 4 paths, P={P}, T={args.temperature}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    FIG_DIR.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIG_DIR / "evidence_gap_vs_width.png", dpi=110)
    out = {
        "task": "markov-4",
        "P": P,
        "T": args.temperature,
        "pairs": args.pairs,
        "rows": rows,
        "fit_from": args.fit_from,
        "slope": slope,
        "slope_se": slope_se,
        "smoke": args.smoke,
    }
    tmp = FIG_DIR / "evidence_gap_vs_width.json.tmp"
    tmp.write_text(json.dumps(out, indent=1, default=float))
    os.replace(tmp, FIG_DIR / "evidence_gap_vs_width.json")
    print(f"slope {slope:.3f} +- {slope_se:.3f}; wrote {FIG_DIR / 'evidence_gap_vs_width.png'} and .json")


if __name__ == "__main__":
    main()
