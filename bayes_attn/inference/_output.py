"""Sampler output as an ArviZ DataTree, netCDF round trip and predictor statistics.

Groups: ``posterior`` (derived quantities per draw: ``f`` over ``test``, optional ``f_var``,
``U`` over ``(path, path_)``, weights only on request), ``sample_stats``, ``warmup_sample_stats`` (the
same statistics during warm-up), ``warmup_posterior`` (with ``save_warmup``), ``observed_data``
(``y_train``) and ``constant_data`` (``y_test``).  Root attributes hold the run config
(TOML text), seed, sampler kind and package versions, so a file reopens anywhere.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import numpy as np
import xarray as xr

from .._errors import InputError
from .._io import atomic_write, load_netcdf, without_dask
from ..theory import predictor_metrics

_PACKAGES = ("bayes_attn", "jax", "jaxlib", "numpyro", "arviz", "arviz-base", "numpy", "xarray", "blackjax")


def package_versions() -> dict[str, str]:
    """Installed versions of this package and of the numerical packages a run depends on, by distribution name
    (those not installed are left out); run files record them."""
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _dims(name: str, arr: np.ndarray) -> list[str]:
    if name in ("f", "f_var"):
        return ["test"]
    if name == "U":
        return ["path", "path_"]
    if name == "pair_swap_rate":  # tempering: neighbouring rungs (k, k + 1)
        return ["pair"]
    if name == "ladder":
        return ["rung"]
    if name.startswith("U_") and arr.ndim == 4:  # U_l, l >= 2: multi-index (h_l, ..., h_L)
        return [f"{name}_row", f"{name}_col"]
    if name.startswith("attention_") and arr.ndim == 6:  # sampled attention of the first test inputs
        return ["map", f"head_{name[len('attention_') :]}", "key", "query"]
    return [f"{name}_dim_{i}" for i in range(arr.ndim - 2)]


def to_datatree(
    posterior: dict,
    sample_stats: dict,
    *,
    path_labels,
    y_train,
    y_test,
    attrs: dict | None = None,
    warmup_sample_stats: dict | None = None,
    warmup_posterior: dict | None = None,
) -> xr.DataTree:
    """Assemble the run's DataTree from ``(chain, draw, ...)`` arrays (empty or absent warm-up groups are left
    out)."""
    coords = {"path": list(path_labels), "path_": list(path_labels)}

    def ds(group: dict) -> xr.Dataset:
        data = {}
        for k, v in group.items():
            v = np.asarray(v)
            data[k] = xr.DataArray(v, dims=["chain", "draw", *_dims(k, v)])
        n_chain, n_draw = next(iter(group.values())).shape[:2]
        out = xr.Dataset(data, coords={"chain": np.arange(n_chain), "draw": np.arange(n_draw)})
        return out.assign_coords({k: v for k, v in coords.items() if k in out.dims})

    root_attrs = {"package_versions": json.dumps(package_versions())}
    for k, v in (attrs or {}).items():
        root_attrs[k] = v if isinstance(v, (str, int, float)) else json.dumps(v)
    tree = {
        "/": xr.Dataset(attrs=root_attrs),
        "posterior": ds(posterior),
        "sample_stats": ds(sample_stats),
        **{
            name: ds(g)
            for name, g in (("warmup_sample_stats", warmup_sample_stats), ("warmup_posterior", warmup_posterior))
            if g
        },
        "observed_data": xr.Dataset({"y_train": ("train", np.asarray(y_train))}),
        "constant_data": xr.Dataset({"y_test": ("test", np.asarray(y_test))}),
    }
    return xr.DataTree.from_dict(tree)


def write_netcdf(obj, path) -> None:
    """Write a DataTree or Dataset to netCDF (h5netcdf) **atomically**: a temporary file in the same
    folder, then a rename, so a kill never leaves a half-written file.  An unwritable folder or a
    full disk is an :class:`~bayes_attn.InputError` and leaves any earlier file at ``path`` intact."""
    with without_dask():
        atomic_write(path, lambda tmp: obj.to_netcdf(tmp, engine="h5netcdf"), field="out")


def write_run(dt: xr.DataTree, path) -> None:
    """Write a run DataTree to netCDF (:func:`write_netcdf`, atomic)."""
    write_netcdf(dt, path)


def read_run(path) -> xr.DataTree:
    """Open a run written by :func:`write_run` (loaded into memory, file closed)."""
    p = Path(path)
    dt = load_netcdf(p, "run", xr.open_datatree)
    if "posterior" not in dt.children:
        raise InputError(f"run: {str(p)!r} has no posterior group")
    return dt


def predictor_statistics(dt: xr.DataTree) -> dict[str, np.ndarray]:
    """Posterior predictor mean and variance of ``f`` on the test inputs, and ``U``.

    ``Var f = E[f_var] + Var[f]`` when the draws are Rao–Blackwellised (theory.md §5.1),
    else ``Var[f]``.  With test labels, also the metrics of theory.md §3 (accuracy of the sign of
    the mean, bias, variance, generalisation error, probabilistic accuracy).
    """
    post = dt["posterior"].ds
    f = post["f"].values.reshape(-1, post.sizes["test"])
    mean = f.mean(axis=0)
    var = f.var(axis=0)
    if "f_var" in post:
        var = var + post["f_var"].values.reshape(-1, post.sizes["test"]).mean(axis=0)
    out = {"mean": mean, "var": var, "U": post["U"].values.reshape(-1, *post["U"].shape[2:]).mean(axis=0)}
    if "constant_data" in dt.children and "y_test" in dt["constant_data"].ds:
        out.update(predictor_metrics(mean, var, dt["constant_data"].ds["y_test"].values))
    return out
