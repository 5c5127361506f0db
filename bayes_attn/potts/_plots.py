"""Curves and figures of the replica results (docs/potts.md §9.2; data in, PNG out; matplotlib Agg).  The contact
map of a protein family is :func:`bayes_attn.families.plot_contact_map`."""

from __future__ import annotations

import numpy as np

from .._errors import require
from ._replica import Teacher, lambda_opt, ridge_theory, simulate_ridge


def replica_curves(
    teacher: Teacher, alphas, lams=None, *, sites: int = 10, reps: int = 4, seed: int = 1, n_grid: int = 120
) -> dict:
    """Theory curves (dense alpha grid in [0.1, 5], per-site average over ``sites``) and simulation
    points (``alphas``) for each ridge lambda; ``lams`` default {1e-4, 1e-2, 1e-1} plus the optimal
    lambda (per alpha, by scalar search).  Returns arrays ready for ``np.savez``."""
    lams = [1e-4, 1e-2, 1e-1] if not lams else list(lams)
    p = teacher.L - 1
    require(all(a > 0 for a in alphas), "alphas", "must be > 0")
    grid = np.unique(np.concatenate([np.linspace(0.1, 5.0, n_grid), [1.0 - 1e-3, 1.0 + 1e-3]]))
    per_site = [teacher.site(i) for i in range(sites)]
    eigs = [np.linalg.eigh(S) for S, _, _ in per_site]
    out = {
        "alpha_grid": grid,
        "alphas": np.asarray(alphas, float),
        "lams": np.asarray(lams, float),
        "L": teacher.L,
        "sites": sites,
        "reps": reps,
    }
    labels = [f"{lam:g}" for lam in lams] + ["opt"]
    th = np.full((len(labels), grid.size, 2), np.nan)
    sim = np.full((len(labels), len(alphas), 4), np.nan)
    sim_th = np.full((len(labels), len(alphas), 2), np.nan)
    for g, a in enumerate(grid):
        M = max(int(round(a * p)), 1)
        for k, lam in enumerate(lams + [None]):
            vals = []
            for (S, w, s2), eg in zip(per_site, eigs):
                if lam is None and g % 6:  # optimal lambda: a coarser grid (scalar search per point)
                    break
                lm = lambda_opt(S, w, s2, M, eig=eg) if lam is None else lam
                try:
                    r = ridge_theory(S, w, s2, M, lm, eg)
                except ValueError:
                    break
                vals.append((r["rel_coupling_error"], r["test_mse"]))
            if len(vals) == len(per_site):
                th[k, g] = np.mean(vals, 0)
    for j, a in enumerate(alphas):
        M = max(int(round(a * p)), 1)
        for k, lam in enumerate(lams + [None]):
            lm = (
                float(np.mean([lambda_opt(S, w, s2, M, eig=eg) for (S, w, s2), eg in zip(per_site, eigs)]))
                if lam is None
                else lam
            )
            r = simulate_ridge(teacher, range(sites), M, lm, reps, seed=seed + j)
            sim[k, j] = (r["rel_coupling_error"], r["rel_coupling_error_se"], r["test_mse"], r["test_mse_se"])
            sim_th[k, j] = (r["theory_rel_coupling_error"], r["theory_test_mse"])
    out.update(labels=np.array(labels), theory=th, simulation=sim, simulation_theory=sim_th)
    return out


def plot_replica(curves: dict, path) -> None:
    """Coupling error and test MSE vs alpha: theory lines, simulation points with error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    grid, alphas = curves["alpha_grid"], curves["alphas"]
    for k, lab in enumerate(curves["labels"]):
        ok = np.isfinite(curves["theory"][k, :, 0])
        for q, a in enumerate(ax):
            (line,) = a.plot(
                grid[ok],
                curves["theory"][k, ok, q],
                "-" if lab != "opt" else "--",
                label=f"lambda={lab}" if lab != "opt" else "lambda_opt",
            )
            a.errorbar(
                alphas,
                curves["simulation"][k, :, 2 * q],
                yerr=curves["simulation"][k, :, 2 * q + 1],
                fmt="o",
                ms=3,
                color=line.get_color(),
            )
    for a, name in zip(ax, ["relative coupling error  E||A-w*||^2/||w*||^2", "test MSE"]):
        a.set_yscale("log")
        a.axvline(1.0, color="grey", lw=0.5)
        a.set_xlabel("alpha = M/(L-1)")
        a.set_ylabel(name)
    ax[0].legend(fontsize=8)
    ax[0].set_title(
        f"Gaussian-spin ridge scenario, L={int(curves['L'])} (lines: theory, points: simulation)", fontsize=9
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


__all__ = ["replica_curves", "plot_replica"]
