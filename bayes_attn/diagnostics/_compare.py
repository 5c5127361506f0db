"""Theory vs sampled runs: matching and gap statistics (docs/theory.md §5.3).

A run (``bayes-attn sample``) matches the theory entry with the same widths and temperature
(relative tolerance ``1e-9``).  Plots live in :mod:`._plots`.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from .._errors import InputError, require
from ..inference import predictor_statistics


def _attr(dt, key):
    v = dt.attrs.get(key)
    return json.loads(v) if isinstance(v, str) and v[:1] in "[{" else v


def match(theory: xr.Dataset, dt: xr.DataTree, name: str = "run") -> tuple[int, int]:
    """Indices ``(width, temperature)`` of the theory entry matching run ``dt``; InputError if none."""
    widths, T = _attr(dt, "width"), _attr(dt, "temperature")
    require(widths is not None and T is not None, name, "has no width/temperature attributes")
    widths = [int(w) for w in (widths if isinstance(widths, list) else [widths])]
    table = theory["widths"].values
    hits = [i for i, row in enumerate(table) if list(row) == widths]
    temps = theory["temperature"].values
    tj = [j for j, t in enumerate(temps) if abs(t - float(T)) <= 1e-9 * max(abs(t), 1e-300)]
    if not hits or not tj:
        raise InputError(f"{name}: no theory entry at width {widths} and temperature {T} "
                         f"(theory widths {[list(map(int, r)) for r in table]}, temperatures {list(map(float, temps))})")
    return hits[0], tj[0]


def run_gaps(theory: xr.Dataset, dt: xr.DataTree, name: str = "run") -> dict:
    """Sampled vs theory statistics for one run (one table row)."""
    i, j = match(theory, dt, name)
    stats = predictor_statistics(dt)
    th = theory.isel(width=i, temperature=j)
    m_t, m_s = th["predictor_mean"].values, stats["mean"]
    require(m_t.shape == m_s.shape, name, f"has {m_s.size} test points, the theory {m_t.size}")
    U_t, U_s = th["U"].values, stats["U"]
    require(U_t.shape == U_s.shape, name, f"U is {U_s.shape}, the theory's {U_t.shape}")
    y = theory["y_test"].values
    f = dt["posterior"].ds["f"].values  # (chain, draw, test)
    chain_means = f.mean(axis=1)
    n_chain = f.shape[0]
    acc_chain = np.mean(np.sign(chain_means) == y[None, :], axis=1)
    acc_err = float(acc_chain.std(ddof=1) / np.sqrt(n_chain)) if n_chain > 1 else float("nan")
    mcse = chain_means.std(axis=0, ddof=1) / np.sqrt(n_chain) if n_chain > 1 else np.full(m_s.shape, np.nan)
    return {
        "run": name, "width": int(theory["width"].values[i]), "temperature": float(theory["temperature"].values[j]),
        "sampler": str(dt.attrs.get("sampler", "?")), "chains": n_chain, "draws": f.shape[1],
        "acc_sampled": float(stats["accuracy"]), "acc_sampled_err": acc_err,
        "acc_theory": float(th["accuracy"]), "acc_gp": float(th["gp_accuracy"].sel(subset="all")),
        "mean_rel_err": float(np.linalg.norm(m_s - m_t) / np.linalg.norm(m_t)),
        "mean_rms_gap": float(np.sqrt(np.mean((m_s - m_t) ** 2))),
        "mean_rms_mcse": float(np.sqrt(np.mean(mcse ** 2))),
        "U_rel_err": float(np.linalg.norm(U_s - U_t) / np.linalg.norm(U_t)),
        "gen_error_sampled": float(stats["gen_error"]), "gen_error_theory": float(th["gen_error"]),
        "converged": bool(th["converged"]) and bool(th["hessian_pd"]),
        "_mean_sampled": m_s, "_mean_theory": m_t, "_U_sampled": U_s, "_U_theory": U_t,
    }


COLUMNS = ("width", "temperature", "sampler", "chains", "draws", "acc_sampled", "acc_sampled_err", "acc_theory",
           "acc_gp", "mean_rel_err", "mean_rms_gap", "mean_rms_mcse", "U_rel_err", "gen_error_sampled",
           "gen_error_theory", "converged", "run")


def format_table(rows: list[dict]) -> str:
    """A fixed-width text table of :func:`run_gaps` rows (sorted by temperature, width)."""
    rows = sorted(rows, key=lambda r: (r["temperature"], r["width"]))
    cells = [[_fmt(r[c]) for c in COLUMNS] for r in rows]
    w = [max(len(c), *(len(x[k]) for x in cells)) for k, c in enumerate(COLUMNS)]
    lines = ["  ".join(c.rjust(w[k]) for k, c in enumerate(COLUMNS))]
    lines += ["  ".join(x[k].rjust(w[k]) for k in range(len(COLUMNS))) for x in cells]
    return "\n".join(lines)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


__all__ = ["match", "run_gaps", "format_table", "COLUMNS"]
