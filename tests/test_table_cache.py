"""Convergence tables kept on disk (bayes_attn/diagnostics/_table_cache.py): read back only for the same draws,
labels and credible-interval mass, and then equal to a fresh computation."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from arviz_base import rc_context

from bayes_attn.diagnostics import _table_cache
from bayes_attn.diagnostics._mcmc_stats import diagnostics_table


def _dataset(seed=0, pairs=("a|a", "a|b", "b|b")):
    rng = np.random.default_rng(seed)
    return xr.Dataset(
        {
            "f": (("chain", "draw", "test"), rng.standard_normal((4, 60, 5)).cumsum(axis=1) * 0.1),
            "U": (("chain", "draw", "pair"), rng.standard_normal((4, 60, 3))),
        },
        coords={"pair": list(pairs)},
    )


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("BAYES_ATTN_CACHE_DIR", str(tmp_path))
    return tmp_path / "diagnostics"


def test_a_table_is_kept_and_read_back_equal(folder, monkeypatch):
    ds = _dataset()
    first = _table_cache.cached_table(ds)
    pd.testing.assert_frame_equal(first, diagnostics_table(ds))
    assert len(list(folder.glob("*.npz"))) == 1
    # the second call reads the file: computing is made impossible
    monkeypatch.setattr(_table_cache, "diagnostics_table", lambda ds: pytest.fail("computed again"))
    pd.testing.assert_frame_equal(_table_cache.cached_table(ds), first)


@pytest.mark.parametrize("change", ["one draw", "a label", "ci_prob"])
def test_any_change_to_what_the_table_depends_on_is_a_new_key(folder, change):
    ds = _dataset()
    _table_cache.cached_table(ds)
    other = ds.copy(deep=True)
    if change == "one draw":
        other["f"].values[2, 30, 1] += 1e-12
    elif change == "a label":
        other = _dataset(pairs=("a|a", "b|a", "b|b"))
    if change == "ci_prob":
        with rc_context({"stats.ci_prob": 0.9}):
            table = _table_cache.cached_table(other)
            fresh = diagnostics_table(other)
    else:
        table, fresh = _table_cache.cached_table(other), diagnostics_table(other)
    pd.testing.assert_frame_equal(table, fresh)
    assert len(list(folder.glob("*.npz"))) == 2


def test_a_corrupt_file_is_computed_again_and_an_unusable_folder_is_no_error(folder, tmp_path, monkeypatch):
    ds = _dataset(1)
    _table_cache.cached_table(ds)
    (path,) = folder.glob("*.npz")
    path.write_bytes(b"not a table")
    pd.testing.assert_frame_equal(_table_cache.cached_table(ds), diagnostics_table(ds))
    assert np.load(path)["values"].shape == (8, 5)  # written again
    blocker = tmp_path / "file"
    blocker.write_text("a file where the folder should be")
    monkeypatch.setenv("BAYES_ATTN_CACHE_DIR", str(blocker))
    pd.testing.assert_frame_equal(_table_cache.cached_table(ds), diagnostics_table(ds))
    monkeypatch.setenv("BAYES_ATTN_CACHE_DIR", "off")
    monkeypatch.setattr(_table_cache, "atomic_savez", lambda *a, **k: pytest.fail("written with the cache off"))
    pd.testing.assert_frame_equal(_table_cache.cached_table(ds), diagnostics_table(ds))
