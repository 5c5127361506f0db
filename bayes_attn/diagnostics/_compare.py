"""Theory vs sampled runs: one matcher, one per-chain accuracy, ArviZ MCSE (docs/theory.md §5.3).

A run (``bayes-attn sample``) matches the theory entry with the same widths and temperature
(relative tolerance ``1e-9``); :func:`run_gaps` gives one table row per run.  ``converged`` in a row
is the run's own verdict (:func:`bayes_attn.diagnostics.verdict`, the gates of ``diagnose``);
``theory_ok`` says whether the matched saddle point converged with a positive-definite Hessian.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from .._errors import InputError, require
from ..inference import predictor_statistics
from ._convergence import Thresholds, summarize
from ._mcmc_stats import mcse_mean


def run_attr(dt, key, default=None):
    """A root attribute of a run, JSON-decoded when it holds a list or a dict."""
    v = dt.attrs.get(key, default)
    if isinstance(v, str) and v[:1] in "[{":
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


def run_widths(dt) -> list[int] | None:
    w = run_attr(dt, "width")
    if w is None:
        return None
    return [int(x) for x in (w if isinstance(w, list) else [w])]


def match(theory: xr.Dataset, dt, name: str = "run") -> tuple[int, int]:
    """Indices ``(width, temperature)`` of the theory entry matching run ``dt``; :class:`InputError` if none.

    With a ``widths`` variable (``bayes-attn theory`` files) every layer width must agree; otherwise
    (theory files with only a ``width`` coordinate) the run must have equal widths and match it.
    """
    widths, T = run_widths(dt), run_attr(dt, "temperature")
    require(widths is not None and T is not None, name, "has no width/temperature attributes")
    if "widths" in theory:
        table = theory["widths"].values
        hits = [i for i, row in enumerate(table) if [int(v) for v in row] == widths]
        known = [list(map(int, r)) for r in table]
    else:
        coord = [int(v) for v in theory["width"].values]
        hits = [i for i, w in enumerate(coord) if len(set(widths)) == 1 and w == widths[0]]
        known = coord
    temps = np.atleast_1d(theory["temperature"].values)
    tj = [j for j, t in enumerate(temps) if abs(t - float(T)) <= 1e-9 * max(abs(t), 1e-300)]
    if not hits or not tj:
        raise InputError(
            f"{name}: no theory entry at width {widths} and temperature {T} "
            f"(theory widths {known}, temperatures {list(map(float, temps))})"
        )
    return hits[0], tj[0]


def chain_accuracies(dt) -> np.ndarray:
    """Accuracy of the sign of each chain's mean predictor on the test labels: ``(chain,)``."""
    f = dt["posterior"].ds["f"].values  # (chain, draw, test)
    y = dt["constant_data"].ds["y_test"].values
    return np.mean(np.sign(f.mean(axis=1)) == y[None, :], axis=1)


def accuracy_error(acc_chain: np.ndarray) -> float:
    """Standard error of the mean of the per-chain accuracies (NaN with one chain)."""
    n = acc_chain.size
    return float(acc_chain.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")


def predictor_mcse(dt) -> np.ndarray:
    """ArviZ's MCSE of the posterior mean of ``f`` on every test input (``az.mcse(method="mean")``: split-chain
    ESS), computed for all inputs at once (:func:`._mcmc_stats.mcse_mean`)."""
    return mcse_mean(dt["posterior"].ds["f"].transpose("chain", "draw", ...).values)


def run_gaps(theory: xr.Dataset, dt, name: str = "run", thresholds: Thresholds = Thresholds()) -> dict:
    """Sampled vs theory statistics for one run (one table row)."""
    i, j = match(theory, dt, name)
    stats = predictor_statistics(dt)
    th = theory.isel(width=i, temperature=j)
    m_t, m_s = th["predictor_mean"].values, stats["mean"]
    require(m_t.shape == m_s.shape, name, f"has {m_s.size} test points, the theory {m_t.size}")
    U_t, U_s = th["U"].values, stats["U"]
    require(U_t.shape == U_s.shape, name, f"U is {U_s.shape}, the theory's {U_t.shape}")
    f = dt["posterior"].ds["f"]
    acc_chain = chain_accuracies(dt)
    mcse = predictor_mcse(dt)
    rep = summarize(dt, thresholds)
    theory_ok = bool(th["converged"]) and bool(th["hessian_pd"]) if "converged" in th else True
    acc_gp = float(th["gp_accuracy"].sel(subset="all")) if "gp_accuracy" in th else float("nan")
    return {
        "run": name,
        "width": int(theory["width"].values[i]),
        "temperature": float(theory["temperature"].values[j]),
        "sampler": str(dt.attrs.get("sampler", "?")),
        "model": str(dt.attrs.get("model", "?")),
        "chains": f.sizes["chain"],
        "draws": f.sizes["draw"],
        "acc_sampled": float(stats["accuracy"]),
        "acc_sampled_err": accuracy_error(acc_chain),
        "acc_theory": float(th["accuracy"]),
        "acc_gp": acc_gp,
        "mean_rel_err": float(np.linalg.norm(m_s - m_t) / np.linalg.norm(m_t)),
        "mean_rms_gap": float(np.sqrt(np.mean((m_s - m_t) ** 2))),
        "mean_rms_mcse": float(np.sqrt(np.mean(mcse**2))),
        "U_rel_err": float(np.linalg.norm(U_s - U_t) / np.linalg.norm(U_t)),
        "gen_error_sampled": float(stats["gen_error"]),
        "gen_error_theory": float(th["gen_error"]) if "gen_error" in th else float("nan"),
        "max_rhat": rep.max_rhat,
        "min_ess_bulk": rep.min_ess_bulk,
        "divergences": rep.divergences,
        "converged": rep.passed,
        "theory_ok": theory_ok,
        "_mean_sampled": m_s,
        "_mean_theory": m_t,
        "_mean_mcse": mcse,
        "_U_sampled": U_s,
        "_U_theory": U_t,
    }


#: the columns of :func:`format_table`, in order (keys of a :func:`run_gaps` row)
COLUMNS = (
    "width",
    "temperature",
    "model",
    "sampler",
    "chains",
    "draws",
    "acc_sampled",
    "acc_sampled_err",
    "acc_theory",
    "acc_gp",
    "mean_rel_err",
    "mean_rms_gap",
    "mean_rms_mcse",
    "U_rel_err",
    "max_rhat",
    "min_ess_bulk",
    "divergences",
    "converged",
    "theory_ok",
    "run",
)


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


__all__ = [
    "match",
    "run_gaps",
    "format_table",
    "COLUMNS",
    "chain_accuracies",
    "accuracy_error",
    "predictor_mcse",
    "run_attr",
    "run_widths",
]
