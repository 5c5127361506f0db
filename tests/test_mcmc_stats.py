"""The vectorized convergence statistics equal ArviZ's, quantity by quantity (bayes_attn/diagnostics/_mcmc_stats.py)."""

import arviz as az
import numpy as np
import pytest
import xarray as xr

from bayes_attn.diagnostics._mcmc_stats import COLUMNS, diagnostics_table, mcse_mean


def _ar1(rng, chains, draws, k, phi, offsets=0.0):
    x = np.empty((chains, draws, k))
    x[:, 0] = rng.standard_normal((chains, k))
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + np.sqrt(1 - phi**2) * rng.standard_normal((chains, k))
    return x + offsets


def _dataset(rng, chains, draws):
    """Quantities that take every branch of ArviZ's estimators: independent, strongly and negatively
    autocorrelated, chains stuck apart (large R-hat), ties (few values), a constant, heavy tails."""
    k = 6
    cols = [
        rng.standard_normal((chains, draws, k)),
        _ar1(rng, chains, draws, k, 0.95),
        _ar1(rng, chains, draws, k, -0.6),
        _ar1(rng, chains, draws, k, 0.5, offsets=np.arange(chains)[:, None, None] * 2.0),
        rng.integers(0, 3, (chains, draws, k)).astype(float),
        rng.standard_t(1.5, (chains, draws, k)),
    ]
    f = np.concatenate(cols, axis=2)
    f[:, :, 0] = 4.2  # constant
    U = _ar1(rng, chains, draws, 3, 0.8)
    return xr.Dataset(
        {
            "f": (("chain", "draw", "test"), f),
            "U": (("chain", "draw", "pair"), U),
            "U_a": (("chain", "draw"), _ar1(rng, chains, draws, 1, 0.3)[..., 0]),
        },
        coords={"pair": ["a|a", "a|b", "b|b"]},
    )


@pytest.mark.parametrize("chains,draws", [(4, 200), (4, 201), (2, 64), (1, 50), (3, 4), (6, 9)])
def test_every_column_equals_arviz(chains, draws):
    ds = _dataset(np.random.default_rng(chains * 1000 + draws), chains, draws)
    ours = diagnostics_table(ds)
    ref = az.summary(ds, kind="diagnostics")
    assert list(ours.columns) == list(COLUMNS) == list(ref.columns)
    assert list(ours.index) == list(ref.index)
    np.testing.assert_allclose(
        ours.to_numpy(dtype=float), ref.to_numpy(dtype=float), rtol=1e-9, atol=1e-12, equal_nan=True
    )
    f = ds["f"].values
    np.testing.assert_allclose(mcse_mean(f), az.mcse(ds[["f"]], method="mean")["f"].values, rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(mcse_mean(f[..., :2].reshape(chains, draws, 1, 2))[:, 1], mcse_mean(f[..., 1]))


def test_nan_draws_and_short_runs_give_nan_as_in_arviz():
    rng = np.random.default_rng(1)
    f = rng.standard_normal((4, 30, 3))
    f[2, 5, 1] = np.nan
    ds = xr.Dataset({"f": (("chain", "draw", "test"), f)})
    ours, ref = diagnostics_table(ds), az.summary(ds, kind="diagnostics")
    assert np.isnan(ours.loc["f[1]"]).all() and not np.isnan(ours.loc["f[0]"]).any()
    np.testing.assert_allclose(ours.to_numpy(float), ref.to_numpy(float), rtol=1e-9, equal_nan=True)
    short = xr.Dataset({"f": (("chain", "draw", "test"), f[:, :3, [0, 2]])})
    assert np.isnan(diagnostics_table(short).to_numpy(float)).all()


def test_a_planted_error_is_caught(monkeypatch):
    """The comparison has power: dropping the monotone-sequence correction moves ESS away from ArviZ's."""
    import bayes_attn.diagnostics._mcmc_stats as ms

    ds = _dataset(np.random.default_rng(7), 4, 200)
    ref = az.summary(ds, kind="diagnostics")
    monkeypatch.setattr(ms, "_monotone", lambda sums: sums)
    bad = ms.diagnostics_table(ds)
    assert not np.allclose(bad["ess_bulk"].to_numpy(float), ref["ess_bulk"].to_numpy(float), rtol=1e-6)
