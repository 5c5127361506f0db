"""The finite-width limit at fixed load alpha = P / N: exact order-parameter posterior vs the saddle-point theory.

The theory (docs/theory.md §4) is exact as N, P -> infinity with alpha = P / N fixed.  This script runs (or reuses)
the sweep ``configs/limit_study.toml``: on the hidden-Markov 4-path task (T = 0.01, 1000 test inputs) the exact
posterior of the order parameters (the Wishart chain of docs/theory.md §5.2, NUTS from the Laplace start) at
alpha = 0.5, 1 and 4, P = 100 ... 10^4, three data seeds; every cell also solves the saddle point on the same data.
Training sets with P > r = 924 run in path space (docs/theory.md §4.10), so a cell at P = 10^4 costs what one at
P = 10^3 does.

Per cell (``bayes_attn.diagnostics.run_gaps``): the test-accuracy gap (sampled - theory, in points), the
relative error of the posterior-mean predictor ``||<f> - f_theory|| / ||f_theory||`` with its Monte Carlo floor
``||MCSE|| / ||f_theory||``, the relative error of ``U``, and the chains' diagnostics.  Per alpha: the log-log slope
of each relative error against N (least squares over every size and seed) and its standard error.

The verdict of a cell *(project choice)*: PASS when its chains converged (max R-hat < 1.01 and min bulk ESS > 400
over f, U and U_a; no divergence) and its saddle point converged, i.e. when the cell measures what it says.  The
slopes are reported as measured, whatever they are.

    python examples/limit_study.py [--out runs/limit_study] [--workers 2] [--smoke]

Writes ``$FIG_DIR/limit_study.json`` and ``limit_study.png`` (``FIG_DIR`` defaults to docs/figures).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "limit_study.toml"

#: the smoke run's sweep: two sizes at two loads, two seeds, short chains (the test suite)
SMOKE = """
[data]
task = "markov"
P = 20
n_test = 20
paths = 4
[network]
width = 20
readout = "last"
temperature = 0.01
[model]
kind = "order_parameters"
[sampler]
kind = "nuts"
chains = 2
warmup = 40
draws = 40
seed = 0
init = "theory"
progress_bar = false
[sweep.size]
"data.P" = [20, 40, 20, 40]
"network.width" = [20, 40, 10, 20]
[sweep.seed]
"data.seed_train" = [27, 1027]
"sampler.seed" = [0, 1]
"""

RHAT_MAX, ESS_MIN = 1.01, 400


def loglog_slope(N, err):
    """Least-squares slope of ``ln err`` on ``ln N`` and its standard error (``nan`` with fewer than 3 points)."""
    import numpy as np

    x, y = np.log(np.asarray(N, float)), np.log(np.asarray(err, float))
    if len(x) < 3 or np.ptp(x) == 0:
        return float("nan"), float("nan")
    A = np.stack([np.ones_like(x), x], axis=1)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    s2 = resid @ resid / (len(x) - 2)
    se = np.sqrt(s2 / np.sum((x - x.mean()) ** 2))
    return float(coef[1]), float(se)


def cell_rows(sweep, out: Path) -> list[dict]:
    """One row per cell that ran: its P, N, alpha, seed and the comparison with its theory."""
    import numpy as np

    from bayes_attn.diagnostics import run_gaps
    from bayes_attn.inference import read_run
    from bayes_attn.sweep import cell_files
    from bayes_attn.theory import read_theory

    rows = []
    for cell in sweep.cells:
        run_file, theory_file, _ = cell_files(out / "cells", cell.name)
        if not (run_file.is_file() and theory_file.is_file()):
            continue
        g = run_gaps(read_theory(theory_file), read_run(run_file), cell.name)
        P, N = int(cell.raw["data"]["P"]), int(cell.raw["network"]["width"])
        norm = np.linalg.norm(g["_mean_theory"])
        row = {
            "cell": cell.name,
            "P": P,
            "N": N,
            "alpha": P / N,
            "seed_train": int(cell.raw["data"]["seed_train"]),
            "acc_theory": g["acc_theory"],
            "acc_sampled": g["acc_sampled"],
            "acc_gap_pts": 100 * (g["acc_sampled"] - g["acc_theory"]),
            "mean_rel_err": g["mean_rel_err"],
            "mean_rel_mcse": float(np.linalg.norm(g["_mean_mcse"]) / norm),
            "U_rel_err": g["U_rel_err"],
            "max_rhat": g["max_rhat"],
            "min_ess_bulk": g["min_ess_bulk"],
            "divergences": int(g["divergences"]),
            "theory_ok": bool(g["theory_ok"]),
        }
        ok = row["max_rhat"] < RHAT_MAX and row["min_ess_bulk"] > ESS_MIN and row["divergences"] == 0
        row["verdict"] = "PASS" if ok and row["theory_ok"] else "FAIL"
        rows.append(row)
    return rows


def fits(rows: list[dict]) -> list[dict]:
    """Per alpha: the log-log slopes of the relative errors of <f> and of U against N."""
    out = []
    for alpha in sorted({r["alpha"] for r in rows}):
        sub = [r for r in rows if r["alpha"] == alpha]
        N = [r["N"] for r in sub]
        f_slope, f_se = loglog_slope(N, [r["mean_rel_err"] for r in sub])
        u_slope, u_se = loglog_slope(N, [r["U_rel_err"] for r in sub])
        out.append(
            {"alpha": alpha, "points": len(sub), "f_slope": f_slope, "f_se": f_se, "U_slope": u_slope, "U_se": u_se}
        )
    return out


def figure(rows, fit_rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    import numpy as np

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.9))
    for k, fr in enumerate(fit_rows):
        c, alpha = f"C{k}", fr["alpha"]
        sub = [r for r in rows if r["alpha"] == alpha]
        Ns = sorted({r["N"] for r in sub})
        for ax, key, slope in ((axes[0], "mean_rel_err", fr["f_slope"]), (axes[1], "U_rel_err", fr["U_slope"])):
            vals = [[r[key] for r in sub if r["N"] == N] for N in Ns]
            ax.errorbar(Ns, [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals], fmt="o-", color=c,
                        capsize=3, label=f"alpha = {alpha:g}" + (f" (slope {slope:.2f})" if np.isfinite(slope) else ""))  # fmt: skip
        floor = [np.mean([r["mean_rel_mcse"] for r in sub if r["N"] == N]) for N in Ns]
        axes[0].plot(Ns, floor, ":", color=c, lw=1)
        gaps = [[r["acc_gap_pts"] for r in sub if r["N"] == N] for N in Ns]
        axes[2].errorbar(Ns, [np.mean(v) for v in gaps], yerr=[np.std(v) for v in gaps], fmt="o-", color=c,
                         capsize=3, label=f"alpha = {alpha:g}")  # fmt: skip
    axes[0].set_ylabel("||<f> - f_theory|| / ||f_theory||  (dotted: MC floor)")
    axes[1].set_ylabel("||<U> - U*|| / ||U*||")
    axes[2].set_ylabel("test accuracy, sampled - theory (points)")
    axes[2].axhline(0.0, color="gray", lw=0.8)
    for ax in axes:
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("width N (P = alpha N)")
        ax.legend(fontsize=7)
    for ax in axes[:2]:
        ax.set_yscale("log")
    fig.suptitle("exact finite-width posterior vs saddle-point theory at fixed alpha (Markov, 4 paths, T = 0.01)",
                 fontsize=9)  # fmt: skip
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    tmp.replace(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=CONFIG)
    ap.add_argument("--out", type=Path, default=Path("runs/limit_study"), help="the sweep's folder (reused)")
    ap.add_argument("--workers", type=int, default=None, help="Dask workers (default: one per core; 0: in process)")
    ap.add_argument("--no-run", action="store_true", help="read the cells already in --out, run nothing")
    ap.add_argument("--smoke", action="store_true", help="a tiny sweep (test suite)")
    args = ap.parse_args(argv)
    from bayes_attn.sweep import load_sweep, run_sweep

    if args.smoke:
        args.out.mkdir(parents=True, exist_ok=True)
        args.config = args.out / "limit_study_smoke.toml"
        args.config.write_text(SMOKE)
        args.workers = 0
    sweep = load_sweep(args.config)
    if not args.no_run:
        _, results = run_sweep(sweep, args.out, workers=args.workers, progress=not args.smoke)
        failed = [r["name"] for r in results if r["status"] == "failed"]
        if failed:
            print(f"failed cells: {', '.join(failed)}")
    rows = cell_rows(sweep, args.out)
    fit_rows = fits(rows)
    for r in rows:
        print(
            f"alpha={r['alpha']:<4g} P={r['P']:>6} N={r['N']:>6} seed={r['seed_train']:>5}: acc gap "
            f"{r['acc_gap_pts']:+.2f} pts, <f> rel err {r['mean_rel_err']:.2e} (MC floor {r['mean_rel_mcse']:.1e}), "
            f"U rel err {r['U_rel_err']:.2e}, R-hat {r['max_rhat']:.3f}, ESS {r['min_ess_bulk']:.0f}  {r['verdict']}"
        )
    for fr in fit_rows:
        print(
            f"alpha = {fr['alpha']:g}: <f> rel err ~ N^({fr['f_slope']:.2f} +- {fr['f_se']:.2f}), "
            f"U rel err ~ N^({fr['U_slope']:.2f} +- {fr['U_se']:.2f}) over {fr['points']} cells"
        )
    sampler = sweep.cells[0].raw["sampler"]
    data = sweep.cells[0].raw["data"]
    out_dir = Path(os.environ.get("FIG_DIR", "docs/figures"))
    out_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "task": f"markov, {data['paths']} paths, T = {sweep.cells[0].raw['network']['temperature']}",
        "n_test": data["n_test"],
        "chains": sampler["chains"],
        "warmup": sampler["warmup"],
        "draws": sampler["draws"],
        "init": sampler.get("init", "uniform"),
        "gates": {"rhat_max": RHAT_MAX, "ess_bulk_min": ESS_MIN},
        "rows": rows,
        "fits": fit_rows,
    }
    tmp = out_dir / "limit_study.json.tmp"
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(out_dir / "limit_study.json")
    figure(rows, fit_rows, out_dir / "limit_study.png")
    print(f"wrote {out_dir / 'limit_study.json'} and limit_study.png")
    return 0 if rows else 1


if __name__ == "__main__":
    raise SystemExit(main())
