"""Width x temperature scans of the theory, as an xarray Dataset (docs/theory.md §4, §8).

Variables over ``(width, temperature)``: ``U`` ``(path, path_)``, ``U_2..U_L`` (multi-index
rows/columns labelled by head tuples), ``U_a``, ``action``, ``predictor_mean`` and
``predictor_var`` ``(test)``, ``accuracy``, ``bias``, ``variance``, ``gen_error``,
``prob_accuracy``; the GP baselines over ``temperature`` (full network, and over ``subset``
for the path subsets); the solver status (``converged``, ``iterations``, ``grad_norm``,
``hessian_min_eig``, ``hessian_pd``, ``min_eig_U`` over ``order_parameter``, ``status``
message, ``alternative_gap``).

Scans *(project choice, theory.md §4.7)*: for each temperature, widths are solved from the
largest down; each width is solved from the GP value and, when a larger width was solved,
also warm-started from it; the lower action is kept and the relative ``U_1`` difference of
the two solutions is stored in ``alternative_gap`` (large = multiple minima).
"""

from __future__ import annotations

import itertools
import json

import jax.numpy as jnp
import numpy as np
import xarray as xr

from ._predictor import gp_predict, predict, predictor_metrics, subset_paths
from ._solver import solve

METRICS = ("accuracy", "bias", "variance", "gen_error", "prob_accuracy")


def _multi_labels(head_names, l: int) -> list[str]:
    """Labels ``"h_l,...,h_L"`` of the multi-index of ``U_l`` (1-based ``l``)."""
    return [",".join(p) for p in itertools.product(*head_names[l - 1:])]


def scan(task, specs, *, tol: float = 1e-9, max_iter: int = 200, warm_start: bool = True,
         gp_subsets: dict | None = None, progress: bool = False) -> xr.Dataset:
    """Solve the theory for every ``(width, temperature, spec)`` of ``specs`` (``RunConfig.specs``).

    ``gp_subsets``: ``{name: keep}`` with ``keep[l]`` the 0-based heads kept in layer ``l``.
    """
    widths = sorted({s.widths for _, _, s in specs}, key=lambda w: w[0])
    temps = sorted({s.temperature for _, _, s in specs})
    by_key = {(s.widths, s.temperature): s for _, _, s in specs}
    any_spec = specs[0][2]
    L, heads = any_spec.n_layers, any_spec.heads
    nw, nt, Q = len(widths), len(temps), task.n_test
    n = any_spec.n_paths
    y, y_test = task.y_train, task.y_test
    phi_tr = task.phi("train", any_spec)
    phi_te = task.phi("test", any_spec)
    shapes = [any_spec.p(l) for l in range(1, L + 1)]
    out = {
        "Us": [np.full((nw, nt, p, p), np.nan) for p in shapes],
        "U_a": np.full((nw, nt), np.nan), "action": np.full((nw, nt), np.nan),
        "predictor_mean": np.full((nw, nt, Q), np.nan), "predictor_var": np.full((nw, nt, Q), np.nan),
        "converged": np.zeros((nw, nt), dtype=np.int8), "hessian_pd": np.zeros((nw, nt), dtype=np.int8),
        "iterations": np.zeros((nw, nt), dtype=np.int64), "grad_norm": np.full((nw, nt), np.nan),
        "hessian_min_eig": np.full((nw, nt), np.nan), "min_eig_U": np.full((nw, nt, L + 1), np.nan),
        "alternative_gap": np.full((nw, nt), np.nan), "status": np.empty((nw, nt), dtype=object),
        **{m: np.full((nw, nt), np.nan) for m in METRICS},
    }
    jobs = [(j, i) for j in range(nt) for i in reversed(range(nw))]
    if progress:
        from tqdm.auto import tqdm

        jobs = tqdm(jobs, desc="theory")
    prev = {}
    for j, i in jobs:
        spec = by_key[(widths[i], temps[j])]
        sol = solve(spec, phi_tr, y, tol=tol, max_iter=max_iter)
        if warm_start and j in prev:
            alt = solve(spec, phi_tr, y, init=prev[j], tol=tol, max_iter=max_iter)
            gap = float(jnp.linalg.norm(alt.U - sol.U) / jnp.linalg.norm(sol.U))
            out["alternative_gap"][i, j] = gap
            if alt.status.ok and (not sol.status.ok or alt.status.action < sol.status.action):
                sol = alt
        if sol.status.ok:
            prev[j] = sol.Us
        st = sol.status
        for l, U in enumerate(sol.Us):
            out["Us"][l][i, j] = np.asarray(U)
        out["U_a"][i, j], out["action"][i, j] = float(sol.U_a), st.action
        mean, var = predict(sol.U, phi_tr, phi_te, y, spec.temperature)
        out["predictor_mean"][i, j], out["predictor_var"][i, j] = np.asarray(mean), np.asarray(var)
        for k, v in predictor_metrics(mean, var, y_test).items():
            out[k][i, j] = v
        out["converged"][i, j], out["hessian_pd"][i, j] = st.converged, st.hessian_pd
        out["iterations"][i, j], out["grad_norm"][i, j] = st.iterations, st.grad_norm
        out["hessian_min_eig"][i, j], out["min_eig_U"][i, j] = st.hessian_min_eig, st.min_eig_U
        out["status"][i, j] = st.message
    wd, tdim = ("width", "temperature")
    data = {
        "U": ((wd, tdim, "path", "path_"), out["Us"][0]),
        "U_a": ((wd, tdim), out["U_a"]), "action": ((wd, tdim), out["action"]),
        "predictor_mean": ((wd, tdim, "test"), out["predictor_mean"]),
        "predictor_var": ((wd, tdim, "test"), out["predictor_var"]),
        "widths": ((wd, "layer_width"), np.array(widths, dtype=np.int64)),
        "y_test": (("test",), np.asarray(y_test)),
    }
    coords = {wd: [w[0] for w in widths], tdim: temps, "path": task.path_labels, "path_": task.path_labels,
              "order_parameter": [f"U_{l}" for l in range(1, L + 1)] + ["U_a"]}
    for l in range(2, L + 1):
        name = f"U_{l}"
        data[name] = ((wd, tdim, f"{name}_row", f"{name}_col"), out["Us"][l - 1])
        coords[f"{name}_row"] = coords[f"{name}_col"] = _multi_labels(task.head_names, l)
    for k in METRICS + ("converged", "hessian_pd", "iterations", "grad_norm", "hessian_min_eig",
                        "alternative_gap"):
        data[k] = ((wd, tdim), out[k])
    data["min_eig_U"] = ((wd, tdim, "order_parameter"), out["min_eig_U"])
    data["status"] = ((wd, tdim), out["status"].astype(str))
    # GP baselines: full network and path subsets (do not depend on the width)
    subsets = {"all": [list(range(h)) for h in heads], **(gp_subsets or {})}
    gp_mean = np.full((len(subsets), nt, Q), np.nan)
    gp_var = np.full((len(subsets), nt, Q), np.nan)
    gp_m = {m: np.full((len(subsets), nt), np.nan) for m in METRICS}
    for s, keep in enumerate(subsets.values()):
        subset_paths(heads, keep)  # validates
        for j, T in enumerate(temps):
            spec = by_key[(widths[0], T)]
            mean, var = gp_predict(spec, phi_tr, phi_te, y, keep=keep)
            gp_mean[s, j], gp_var[s, j] = np.asarray(mean), np.asarray(var)
            for k, v in predictor_metrics(mean, var, y_test).items():
                gp_m[k][s, j] = v
    coords["subset"] = list(subsets)
    data["gp_mean"] = (("subset", tdim, "test"), gp_mean)
    data["gp_var"] = (("subset", tdim, "test"), gp_var)
    for k, v in gp_m.items():
        data[f"gp_{k}"] = (("subset", tdim), v)
    attrs = {"task": task.name, "task_meta": json.dumps(dict(task.meta)), "heads": json.dumps(list(heads)),
             "head_names": json.dumps([list(h) for h in task.head_names]),
             "gp_subsets": json.dumps({k: [list(map(int, h)) for h in v] for k, v in subsets.items()}),
             "variances": json.dumps(list(any_spec.variances)), "readout": any_spec.readout,
             "n_train": int(task.n_train), "tol": float(tol)}
    return xr.Dataset(data, coords=coords, attrs=attrs)


def scan_ok(ds: xr.Dataset) -> bool:
    """True when every solve converged with a positive-definite Hessian."""
    return bool(np.all(ds["converged"].values == 1) and np.all(ds["hessian_pd"].values == 1))


__all__ = ["scan", "scan_ok", "read_theory", "METRICS"]


def read_theory(path, required=("U", "predictor_mean", "accuracy")) -> xr.Dataset:
    """Open a theory file written by ``bayes-attn theory`` (loaded, file closed).

    Raises ``InputError`` naming the file when it is missing, not netCDF, or lacks one of
    the ``required`` variables.
    """
    from pathlib import Path

    from .._errors import InputError
    from .._io import load_netcdf

    p = Path(path)
    ds = load_netcdf(p, "theory", xr.open_dataset)
    for key in required:
        if key not in ds:
            raise InputError(f"theory: {str(p)!r} has no variable {key!r} (not written by `bayes-attn theory`?)")
    return ds

