"""Convergence tables kept on disk, keyed by the draws they summarise (docs/design.md, "Diagnostics").

Every command that reads a run computes its verdict (:func:`~bayes_attn.diagnostics.summarize`): a sweep's worker
when it finishes a cell, then the script that reads the sweep, ``diagnose``, ``compare`` and ``report``, each
again; on a Markov cell (1000 predictions x 4 chains x 1000 draws) the table of R-hat, ESS and MCSE takes about
1.4 s every time.  The table depends on nothing but the draws, their labels, ArviZ's credible-interval mass
(``rcParams["stats.ci_prob"]``, which sets the tail ESS) and the package's code.  :func:`cached_table` hashes
exactly those (BLAKE2b over every draw's bytes, each variable's name, dimensions, shape, dtype and coordinates,
the mass, and :func:`bayes_attn._programs.package_fingerprint`) and keeps the table under that key next to the
compilation cache, ``<cache folder>/diagnostics/<key>.npz`` (:func:`bayes_attn._cache.cache_dir`; written
atomically, pruned with the cache).  So a table is read back only for the very draws it was computed from, by
the same code: a changed draw, label, mass or source file is a new key.  An unreadable file is computed again;
an unwritable folder, or ``BAYES_ATTN_CACHE_DIR=off``, only means computing every time.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import xarray as xr

from .._cache import DIAGNOSTICS, cache_dir
from .._io import atomic_savez
from .._programs import package_fingerprint
from ._mcmc_stats import diagnostics_table


def table_key(ds: xr.Dataset, ci_prob: float) -> str:
    """The hash under which the table of ``ds`` at mass ``ci_prob`` is kept (module docstring)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{package_fingerprint()}|{ci_prob!r}".encode())
    for name, da in ds.data_vars.items():
        values = np.ascontiguousarray(da.values)
        h.update(f"|{name}|{da.dims}|{values.shape}|{values.dtype.str}".encode())
        for dim in da.dims:
            if dim in da.coords:
                coord = np.asarray(da.coords[dim].values)
                h.update(f"|{dim}:{coord.dtype.str}:{coord.tolist()!r}".encode())
        h.update(values.data)
    return h.hexdigest()


def cached_table(ds: xr.Dataset) -> pd.DataFrame:
    """:func:`~bayes_attn.diagnostics._mcmc_stats.diagnostics_table` of ``ds``, read from the cache folder when
    these draws were summarised before (module docstring), else computed and kept there."""
    from arviz_base import rcParams

    folder = cache_dir()
    if folder is None:
        return diagnostics_table(ds)
    path = folder / DIAGNOSTICS / f"{table_key(ds, float(rcParams['stats.ci_prob']))}.npz"
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as z:
                return pd.DataFrame(z["values"], index=z["index"].tolist(), columns=z["columns"].tolist())
        except Exception:  # noqa: BLE001 - a truncated or foreign file: compute it again below
            path.unlink(missing_ok=True)
    table = diagnostics_table(ds)
    try:
        atomic_savez(
            path,
            values=table.to_numpy(dtype=float),
            index=np.asarray([str(i) for i in table.index]),
            columns=np.asarray([str(c) for c in table.columns]),
        )
    except Exception:  # noqa: BLE001 - a read-only or full cache folder: the table is still returned
        pass
    return table


__all__ = ["cached_table", "table_key"]
