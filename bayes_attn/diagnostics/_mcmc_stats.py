"""ArviZ's convergence statistics for many quantities at once (docs/design.md, "Diagnostics").

``az.summary(..., kind="diagnostics")`` computes rank-normalised split R-hat, bulk and tail ESS and the Monte
Carlo standard errors of the mean and the standard deviation (Vehtari et al. 2021) one quantity at a time in
a Python loop; on the 1000 test predictions of a run that took about 5 s per call, and the verdict is
computed by every command that reads a run.  :func:`diagnostics_table` evaluates the same formulas,
written after ``arviz_stats.base.diagnostics`` (arviz-stats 1.3), on all quantities at once with NumPy:

* :func:`_z_scale`: ranks over all draws of a quantity (ties averaged), Blom's back-transform
  ``(r - 3/8) / (S + 1/4)``, then the normal quantile;
* :func:`_split`: each chain cut into its first and last ``floor(n / 2)`` draws;
* :func:`_rhat`: ``sqrt((B / W + n - 1) / n)`` of the split chains; R-hat is the larger of the bulk value
  (z-scaled draws) and the tail value (z-scaled absolute deviations from the median);
* :func:`_ess`: Geyer's initial positive and then initial monotone sequence of the autocorrelations
  (computed by FFT), whose pairs are summed as running minima; ``tau`` is bounded below by
  ``1 / log10(S)`` and a constant quantity has ``ESS = S``;
* bulk ESS: :func:`_ess` of the z-scaled split draws; tail ESS: the smaller ESS of the indicators
  ``x <= q`` at the quantiles ``(1 - p) / 2`` ... ``p`` of ArviZ's credible-interval mass ``p``
  (``rcParams["stats.ci_prob"]``, read at call time), computed as ArviZ does (its ``_ess_tail``);
* MCSE of the mean ``sd / sqrt(ESS_mean)``; of the sd, from the ESS of the squared deviations.

A quantity with a NaN draw, fewer than 4 draws (R-hat: fewer than 2 chains) gets NaN, as in ArviZ.  Tests
hold every column to ArviZ's own values (tests/test_mcmc_stats.py).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy import special
from scipy.fft import next_fast_len

#: the columns of ``az.summary(kind="diagnostics")``, in its order
COLUMNS = ("ess_bulk", "ess_tail", "r_hat", "mcse_mean", "mcse_sd")


def _split(x: np.ndarray) -> np.ndarray:
    """``(k, m, n) -> (k, 2m, n // 2)``: the first and last halves of each chain as chains."""
    half = x.shape[-1] // 2
    return np.concatenate([x[..., :half], x[..., x.shape[-1] - half :]], axis=1)


def _average_ranks(flat: np.ndarray) -> np.ndarray:
    """Ranks (1-based) along the last axis, ties given their average rank (``scipy.stats.rankdata``'s
    ``"average"``, vectorized over rows)."""
    k, size = flat.shape
    order = np.argsort(flat, axis=1)
    srt = np.take_along_axis(flat, order, axis=1)
    idx = np.broadcast_to(np.arange(size), (k, size))
    first = np.ones((k, size), dtype=bool)
    first[:, 1:] = srt[:, 1:] != srt[:, :-1]
    last = np.ones((k, size), dtype=bool)
    last[:, :-1] = first[:, 1:]
    start = np.maximum.accumulate(np.where(first, idx, 0), axis=1)
    end = np.minimum.accumulate(np.where(last, idx, size - 1)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty((k, size))
    np.put_along_axis(ranks, order, (start + end) / 2.0 + 1.0, axis=1)
    return ranks


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Normal scores of the ranks over all draws of each quantity (``(k, m, n)``)."""
    flat = x.reshape(x.shape[0], -1)
    size = flat.shape[1]
    return special.ndtri((_average_ranks(flat) - 0.375) / (size - 0.75 + 1)).reshape(x.shape)


def _rhat(x: np.ndarray) -> np.ndarray:
    """Potential scale reduction of ``(k, m, n)`` chains (between and within variance)."""
    n = x.shape[-1]
    between = n * np.var(x.mean(axis=2), axis=1, ddof=1)
    within = np.var(x, axis=2, ddof=1).mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant quantity: NaN, as in ArviZ
        return np.sqrt((between / within + n - 1) / n)


def _autocov(x: np.ndarray) -> np.ndarray:
    """Autocovariance of each chain at every lag (FFT; divided by ``n``)."""
    n = x.shape[-1]
    m = next_fast_len(2 * n)
    f = np.fft.rfft(x - x.mean(axis=-1, keepdims=True), n=m, axis=-1)
    return np.fft.irfft(f * np.conjugate(f), n=m, axis=-1)[..., :n] / n


def _monotone(sums: np.ndarray) -> np.ndarray:
    """Geyer's initial monotone sequence on pair sums: each pair no larger than the one before."""
    return np.minimum.accumulate(sums, axis=1)


def _ess(x: np.ndarray) -> np.ndarray:
    """Effective sample size of ``(k, m, n)`` chains (Geyer's initial monotone sequence)."""
    x = np.asarray(x, dtype=float)
    k, m, n = x.shape
    size = m * n
    acov = _autocov(x)
    mean_var = acov[:, :, 0].mean(axis=1) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if m > 1:
        var_plus = var_plus + np.var(x.mean(axis=2), axis=1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = 1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]
    rho[:, 0] = 1.0
    # pair j = lags (2j, 2j + 1); the positive sequence stops at the first pair J whose sum is <= 0, or when
    # the lag 2J + 1 reaches n - 3
    n_pairs = n // 2
    pairs = rho[:, : 2 * n_pairs].reshape(k, n_pairs, 2)
    sums = pairs.sum(axis=2)
    j = np.arange(n_pairs)
    stop = (2 * j + 1 >= n - 3)[None, :] | ~(sums > 0)
    J = np.argmax(stop, axis=1)
    # the pairs before J, made monotone (running minimum of the pair sums)
    run = _monotone(sums)
    summed = np.where(j[None, :] < J[:, None], run, 0.0).sum(axis=1)
    even = pairs[np.arange(k), J, 0]
    last_sum = sums[np.arange(k), J]
    # the lag 2J enters once: kept when pair J was stored (sum >= 0) or its even lag is positive
    v = np.where((J > 0) & ((last_sum >= 0) | (even > 0)), even, 0.0)
    v = np.where(J == 0, 1.0, v)
    tau = np.maximum(-1.0 + 2.0 * summed + v, 1 / np.log10(size))
    ess = size / tau
    ess = np.where(np.isnan(rho).any(axis=1), np.nan, ess)
    const = (x.max(axis=(1, 2)) - x.min(axis=(1, 2))) < np.finfo(float).resolution
    return np.where(const, float(size), ess)


def _mcse_mean(x: np.ndarray) -> np.ndarray:
    """MCSE of the mean of ``(k, m, n)`` draws: their sd over the square root of the split-chain ESS."""
    return np.std(x.reshape(x.shape[0], -1), axis=1, ddof=1) / np.sqrt(_ess(_split(x)))


def _statistics(x: np.ndarray, ci_prob: float) -> np.ndarray:
    """``(k, chain, draw)`` finite draws -> ``(k, 5)`` columns :data:`COLUMNS`."""
    with np.errstate(invalid="ignore", divide="ignore"):  # constant quantities: NaN R-hat and MCSE(sd), as in ArviZ
        return _columns(x, ci_prob)


def _columns(x: np.ndarray, ci_prob: float) -> np.ndarray:
    k, m, n = x.shape
    split = _split(x)
    z = _z_scale(split)
    ess_bulk = _ess(z)
    flat = x.reshape(k, -1)
    lo, hi = sorted((ci_prob, 1 - ci_prob))
    q = np.quantile(flat, [lo, hi], axis=1)  # (2, k)
    ess_tail = np.minimum(
        _ess(_split((x <= q[0][:, None, None]).astype(float))),
        _ess(_split((x <= q[1][:, None, None]).astype(float))),
    )
    if m >= 2:
        med = np.median(split.reshape(k, -1), axis=1)[:, None, None]
        r_hat = np.maximum(_rhat(z), _rhat(_z_scale(np.abs(split - med))))
    else:
        r_hat = np.full(k, np.nan)
    mcse = _mcse_mean(x)
    dev = x - flat.mean(axis=1)[:, None, None]
    sq = dev**2
    evar = sq.reshape(k, -1).mean(axis=1)
    varvar = ((dev**4).reshape(k, -1).mean(axis=1) - evar**2) / _ess(_split(sq))
    mcse_sd = np.sqrt(varvar / evar / 4)
    return np.stack([ess_bulk, ess_tail, r_hat, mcse, mcse_sd], axis=1)


#: quantities per block: a block's temporaries stay a few MB (reused by the allocator instead of mapped afresh)
BLOCK_BYTES = 4 << 20


def _per_quantity(draws, fn, *args, columns: tuple = ()) -> np.ndarray:
    """``fn`` (``(k, chain, draw)`` draws -> ``(k, *columns)``) on every entry of ``(chain, draw, ...)`` ``draws``, in
    blocks of :data:`BLOCK_BYTES`; shape ``(*entries, *columns)``, NaN for an entry with a NaN draw or fewer than
    4 draws (as ArviZ)."""
    a = np.asarray(draws, dtype=float)
    c, d = a.shape[:2]
    x = np.moveaxis(a.reshape(c, d, -1), 2, 0)
    out = np.full((len(x), *columns), np.nan)
    valid = np.flatnonzero(~np.isnan(x).any(axis=(1, 2)) & (d >= 4))
    per = max(1, BLOCK_BYTES // max(1, c * d * 8))
    for i in range(0, len(valid), per):
        block = valid[i : i + per]
        out[block] = fn(x[block], *args)
    return out.reshape((*a.shape[2:], *columns))


def mcse_mean(draws) -> np.ndarray:
    """``az.mcse(..., method="mean")`` of ``(chain, draw, ...)`` draws, for all entries at once: the standard
    deviation over draws over the square root of the split-chain ESS (NaN where a draw is NaN or fewer than 4
    draws)."""
    return _per_quantity(draws, _mcse_mean)


def diagnostics_table(ds: xr.Dataset):
    """``az.summary(ds, kind="diagnostics")`` as a plain float ``pandas.DataFrame`` with ArviZ's row labels
    (``f[12]``, ``U[a|b]``, ``U_a``), computed for all entries at once (module docstring)."""
    import pandas as pd
    from arviz_base import dataset_to_dataframe, rcParams

    ci_prob = float(rcParams["stats.ci_prob"])
    out = {}
    for name, da in ds.data_vars.items():
        da = da.transpose("chain", "draw", ...)
        res = _per_quantity(da.values, _statistics, ci_prob, columns=(len(COLUMNS),))
        coords = {k: v for k, v in da.coords.items() if k not in ("chain", "draw")}
        out[name] = xr.DataArray(np.moveaxis(res, -1, 0), dims=("summary", *da.dims[2:]), coords=coords).assign_coords(
            summary=list(COLUMNS)
        )
    table = dataset_to_dataframe(xr.Dataset(out), sample_dims=["summary"]).T
    return pd.DataFrame(table, dtype=float)


__all__ = ["diagnostics_table", "mcse_mean", "COLUMNS"]
