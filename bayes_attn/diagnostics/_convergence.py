"""Convergence diagnostics on symmetry-invariant quantities (docs/theory.md §7).

Gated quantities: the test predictions ``f`` and the entries of ``U`` (upper triangle;
``U`` is symmetric); for a Potts pseudo-posterior (:mod:`bayes_attn.potts_bayes`, docs/potts.md §11.1) the
gauge-fixed couplings ``K0`` of the site pairs i < j (``K0`` is symmetric under (i, a) <-> (j, b)).  Raw
weights have sign/permutation/rotation symmetries and are never gated.  Statistics are ArviZ's
(rank-normalised split R-hat, bulk/tail ESS, MCSE: ``az.summary(kind="diagnostics")``), evaluated for all
entries at once by :mod:`._mcmc_stats` and tested equal to ArviZ's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from ..config import ATTENTION_MODELS, Thresholds
from ._table_cache import cached_table

#: the quantities the verdict gates: the test predictions ``f``, the entries of ``U`` and the gauge-fixed Potts
#: couplings ``K0`` (module docstring)
GATED = ("f", "U", "K0")


@dataclass
class Report:
    """Per-quantity table and the verdict."""

    table: "object"  # pandas DataFrame: rows = quantities
    divergences: int
    bfmi: np.ndarray | None
    thresholds: Thresholds
    failures: list[str] = field(default_factory=list)
    #: replica exchange (``kind = "tempering"``), else ``None``: ``{"pair_swap_rate": (K - 1,) mean acceptance
    #: probability of each neighbouring pair over chains and draws, "round_trips": (chain,) trips completed}``
    exchange: dict | None = None

    @property
    def passed(self) -> bool:
        """The verdict: every gate holds (the meaning of ``converged`` everywhere in the package)."""
        return not self.failures

    @property
    def max_rhat(self) -> float:
        return float(np.nanmax(self.table["r_hat"].to_numpy(dtype=float)))

    @property
    def min_ess_bulk(self) -> float:
        return float(np.nanmin(self.table["ess_bulk"].to_numpy(dtype=float)))

    @property
    def min_ess_tail(self) -> float:
        return float(np.nanmin(self.table["ess_tail"].to_numpy(dtype=float)))


def invariant_draws(dt: xr.DataTree) -> xr.Dataset:
    """The gated quantities as a Dataset: ``f`` and ``U`` restricted to its upper triangle.

    Runs of sampled attention (docs/attention.md) gate ``U``'s eigenvalues instead (``U_eig``, ascending): their
    heads are exchangeable, so ``U`` is invariant only up to a permutation of the paths and its entries may be
    relabelled between chains; in the GP limit (``limit = "gp"``) ``U`` is fixed, not sampled, and only ``f`` is
    gated.
    """
    post = dt["posterior"].ds
    data = {}
    if "f" in post:
        data["f"] = post["f"]
    if "U" in post and dt.attrs.get("model") in ATTENTION_MODELS:
        if dt.attrs.get("limit") != "gp":
            eig = np.linalg.eigvalsh(post["U"].values)
            data["U_eig"] = xr.DataArray(eig, dims=["chain", "draw", "eigenvalue"])
    elif "U" in post:
        U = post["U"]
        n = U.sizes["path"]
        iu, ju = np.triu_indices(n)
        labels = [f"{U.path.values[i]}|{U.path_.values[j]}" for i, j in zip(iu, ju)]
        vals = U.values[:, :, iu, ju]
        data["U"] = xr.DataArray(vals, dims=["chain", "draw", "pair"], coords={"pair": labels})
    for extra in ("U_a",):
        if extra in post:
            data[extra] = post[extra]
    if "K0" in post:  # Potts pseudo-posterior: gauge-fixed couplings (chain, draw, site, site_, colour, colour_)
        K0 = post["K0"]
        iu, ju = np.triu_indices(K0.shape[2], 1)
        vals = K0.values[:, :, iu, ju].reshape(K0.shape[0], K0.shape[1], -1)
        data["K0"] = xr.DataArray(vals, dims=["chain", "draw", "coupling"])
    return xr.Dataset(data)


def summarize(dt: xr.DataTree, thresholds: Thresholds = Thresholds()) -> Report:
    """R-hat, ESS bulk/tail and MCSE of the invariant quantities, divergences, E-BFMI, verdict.

    The **one verdict function** of the package: ``bayes-attn diagnose``, ``compare``, the HTML
    report and ``sweep`` all call it, so PASS / ``converged`` means the same everywhere.
    """
    ds = invariant_draws(dt)
    table = cached_table(ds)  # az.summary(ds, kind="diagnostics"), all entries at once; kept on disk per draws
    stats = dt["sample_stats"].ds if "sample_stats" in dt.children else xr.Dataset()
    div = int(stats["diverging"].values.sum()) if "diverging" in stats else 0
    bfmi = None
    if "energy" in stats:
        e = stats["energy"].values
        bfmi = np.square(np.diff(e, axis=1)).mean(axis=1) / np.var(e, axis=1)
    t = thresholds
    failures = []
    rhat = table["r_hat"].to_numpy(dtype=float)
    ess_b = table["ess_bulk"].to_numpy(dtype=float)
    ess_t = table["ess_tail"].to_numpy(dtype=float)
    if not np.all(rhat < t.rhat_max):
        failures.append(f"max R-hat {np.nanmax(rhat):.4f} >= {t.rhat_max}")
    if not np.all(ess_b > t.ess_bulk_min):
        failures.append(f"min bulk ESS {np.nanmin(ess_b):.0f} <= {t.ess_bulk_min:.0f}")
    if not np.all(ess_t > t.ess_tail_min):
        failures.append(f"min tail ESS {np.nanmin(ess_t):.0f} <= {t.ess_tail_min:.0f}")
    if div > t.max_divergences:
        failures.append(f"{div} divergent transitions after warm-up")
    if bfmi is not None and np.any(bfmi < t.bfmi_min):
        failures.append(f"E-BFMI {np.min(bfmi):.2f} < {t.bfmi_min}")
    return Report(table, div, bfmi, t, failures, exchange_summary(stats))


def exchange_summary(stats: xr.Dataset) -> dict | None:
    """What says whether a replica-exchange run's ladder works (docs/samplers.md, "Tempering"), or ``None`` for
    other samplers: the mean swap acceptance of each neighbouring pair (a pair near 0 cuts the ladder in two) and
    the round trips each chain's states completed (none: the hot rungs' exploration never reached the posterior).
    Reported beside the verdict, not gated: how many trips are enough depends on the modes, which the gated
    quantities' R-hat judges."""
    if "pair_swap_rate" not in stats or "round_trips" not in stats:
        return None
    rates = stats["pair_swap_rate"].values
    return {
        "pair_swap_rate": rates.reshape(-1, rates.shape[-1]).mean(axis=0),
        "round_trips": stats["round_trips"].values[:, -1].astype(int),
    }


def exchange_lines(exchange: dict) -> list[str]:
    """The two lines of :func:`exchange_summary` for the text and HTML reports."""
    return [
        "swap acceptance per neighbouring pair (coldest first): "
        + ", ".join(f"{r:.2f}" for r in exchange["pair_swap_rate"]),
        "round trips per chain: " + ", ".join(str(int(n)) for n in exchange["round_trips"]),
    ]


def format_report(rep: Report, max_rows: int = 12) -> str:
    """Human-readable text: worst rows per quantity, divergences, BFMI and the verdict."""
    tab = rep.table
    lines = []
    for q in GATED + ("U_a",):
        rows = tab[[str(i).split("[")[0] == q for i in tab.index]]
        if len(rows) == 0:
            continue
        lines.append(
            f"{q}: {len(rows)} entries; max R-hat {rows['r_hat'].max():.4f}, "
            f"min ESS bulk {rows['ess_bulk'].min():.0f}, min ESS tail {rows['ess_tail'].min():.0f}, "
            f"max MCSE(mean) {rows['mcse_mean'].max():.3g}"
        )
        worst = rows.sort_values("ess_bulk").head(max_rows)
        lines.append(worst.to_string(float_format=lambda v: f"{v:.4g}"))
    lines.append(f"divergences: {rep.divergences}")
    if rep.bfmi is not None:
        lines.append("E-BFMI per chain: " + ", ".join(f"{b:.2f}" for b in rep.bfmi))
    if rep.exchange is not None:
        lines.extend(exchange_lines(rep.exchange))
    t = rep.thresholds
    gate = f"(R-hat < {t.rhat_max}, ESS bulk > {t.ess_bulk_min:.0f}, ESS tail > {t.ess_tail_min:.0f})"
    lines.append(("PASS " + gate) if rep.passed else ("FAIL " + gate + ": " + "; ".join(rep.failures)))
    return "\n".join(lines)
