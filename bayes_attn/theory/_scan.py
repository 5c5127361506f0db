"""Width x temperature scans of the theory, as an xarray Dataset (docs/theory.md §4, §8).

Variables over ``(width, temperature)``: ``U`` ``(path, path_)``, ``U_2..U_L`` (multi-index
rows/columns labelled by head tuples), ``U_a``, ``action``, ``predictor_mean`` and
``predictor_var`` ``(test)``, ``accuracy``, ``bias``, ``variance``, ``gen_error``,
``prob_accuracy``; the GP baselines over ``temperature`` (full network, and over ``subset``
for the path subsets); the solver status (``converged``, ``iterations``, ``grad_norm``,
``hessian_min_eig``, ``hessian_pd``, ``min_eig_U`` over ``order_parameter``, ``status``
message, ``alternative_gap``).

Scans *(project choice, docs/theory.md §4.7)*: for each temperature, widths are solved from the
largest down; each width is solved from the GP value and, when a larger width was solved,
also warm-started from it; the lower action is kept and the relative ``U_1`` difference of
the two solutions is stored in ``alternative_gap`` (large = multiple minima).

The parts: :func:`solve_with_warm_start` (one grid point), :func:`solve_grid` (the loop),
:func:`gp_baselines`, :func:`grid_dataset` (packing into the Dataset); :func:`scan` runs them.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import xarray as xr

from .._errors import InputError
from .._io import load_netcdf
from ._predictor import gp_predict, predict, predictor_metrics, subset_paths
from ._solver import Solution, solve

METRICS = ("accuracy", "bias", "variance", "gen_error", "prob_accuracy")
STATUS = ("converged", "hessian_pd", "iterations", "grad_norm", "hessian_min_eig", "alternative_gap")


def _multi_labels(head_names, l: int) -> list[str]:
    """Labels ``"h_l,...,h_L"`` of the multi-index of ``U_l`` (1-based ``l``)."""
    return [",".join(p) for p in itertools.product(*head_names[l - 1 :])]


def solve_with_warm_start(spec, phi, y, prev=None, *, tol: float = 1e-9, max_iter: int = 200, path_space="auto"):
    """Solve from the GP value and, with ``prev`` (``[U_1..U_L]`` of a neighbouring width), from there too.

    Returns ``(solution, alternative_gap)``: the solution with the lower action among those that
    converged, and the relative ``U_1`` difference of the two solutions (NaN without ``prev``).
    """
    sol = solve(spec, phi, y, tol=tol, max_iter=max_iter, path_space=path_space)
    if prev is None:
        return sol, float("nan")
    alt = solve(spec, phi, y, init=prev, tol=tol, max_iter=max_iter, path_space=path_space)
    U_alt, U_sol = np.asarray(alt.U), np.asarray(sol.U)
    gap = float(np.linalg.norm(U_alt - U_sol) / np.linalg.norm(U_sol))
    if alt.status.ok and (not sol.status.ok or alt.status.action < sol.status.action):
        sol = alt
    return sol, gap


def solve_grid(
    task, spec, widths, temperatures, *, tol=1e-9, max_iter=200, warm_start=True, progress=False, path_space="auto"
) -> dict[tuple[int, int], tuple[Solution, float]]:
    """``{(i, j): (solution, alternative_gap)}`` for ``widths[i]`` x ``temperatures[j]`` (module docstring)."""
    phi_tr = task.phi("train", spec)
    jobs = [(j, i) for j in range(len(temperatures)) for i in reversed(range(len(widths)))]
    if progress:
        from tqdm.auto import tqdm

        jobs = tqdm(jobs, desc="theory")
    out, prev = {}, {}
    for j, i in jobs:
        s = spec.with_(width=widths[i], temperature=temperatures[j])
        sol, gap = solve_with_warm_start(
            s,
            phi_tr,
            task.y_train,
            prev.get(j) if warm_start else None,
            tol=tol,
            max_iter=max_iter,
            path_space=path_space,
        )
        if sol.status.ok:
            prev[j] = sol.Us
        out[(i, j)] = (sol, gap)
    return out


def gp_baselines(task, spec, temperatures, subsets: dict, path_space: str = "auto") -> dict[str, np.ndarray]:
    """GP-limit predictor (docs/theory.md §4.6) of the network and of each head subset, per temperature.

    Returns ``gp_mean`` / ``gp_var`` ``(subset, temperature, test)`` and ``gp_<metric>`` ``(subset, temperature)``.
    """
    phi_tr, phi_te = task.phi("train", spec), task.phi("test", spec)
    S, nt, Q = len(subsets), len(temperatures), task.n_test
    out = {
        "gp_mean": np.full((S, nt, Q), np.nan),
        "gp_var": np.full((S, nt, Q), np.nan),
        **{f"gp_{m}": np.full((S, nt), np.nan) for m in METRICS},
    }
    for s, keep in enumerate(subsets.values()):
        subset_paths(spec.heads, keep)  # validates
        for j, T in enumerate(temperatures):
            mean, var = gp_predict(
                spec.with_(temperature=T), phi_tr, phi_te, task.y_train, keep=keep, path_space=path_space
            )
            out["gp_mean"][s, j], out["gp_var"][s, j] = np.asarray(mean), np.asarray(var)
            for k, v in predictor_metrics(mean, var, task.y_test).items():
                out[f"gp_{k}"][s, j] = v
    return out


def grid_dataset(
    task, spec, widths, temperatures, solutions: dict, gp: dict, subsets: dict, tol: float, path_space: str = "auto"
) -> xr.Dataset:
    """Pack :func:`solve_grid` solutions (with their test predictions) and :func:`gp_baselines` into a Dataset."""
    L, nw, nt, Q = spec.n_layers, len(widths), len(temperatures), task.n_test
    phi_tr, phi_te = task.phi("train", spec), task.phi("test", spec)
    shapes = [spec.p(l) for l in range(1, L + 1)]
    Us = [np.full((nw, nt, p, p), np.nan) for p in shapes]
    scal = {k: np.full((nw, nt), np.nan) for k in ("U_a", "action") + METRICS + STATUS}
    mean_var = {k: np.full((nw, nt, Q), np.nan) for k in ("predictor_mean", "predictor_var")}
    min_eig = np.full((nw, nt, L + 1), np.nan)
    status = np.empty((nw, nt), dtype=object)
    widths_full = []
    for i, w in enumerate(widths):
        widths_full.append(spec.with_(width=w).widths)
    for (i, j), (sol, gap) in solutions.items():
        st = sol.status
        for l, U in enumerate(sol.Us):
            Us[l][i, j] = np.asarray(U)
        mean, var = predict(sol.U, phi_tr, phi_te, task.y_train, temperatures[j], path_space=path_space)
        mean_var["predictor_mean"][i, j], mean_var["predictor_var"][i, j] = np.asarray(mean), np.asarray(var)
        for k, v in predictor_metrics(mean, var, task.y_test).items():
            scal[k][i, j] = v
        scal["U_a"][i, j], scal["action"][i, j] = float(sol.U_a), st.action
        for k in ("converged", "hessian_pd", "iterations", "grad_norm", "hessian_min_eig"):
            scal[k][i, j] = getattr(st, k)
        scal["alternative_gap"][i, j] = gap
        min_eig[i, j], status[i, j] = st.min_eig_U, st.message
    wd, tdim = "width", "temperature"
    data = {
        "U": ((wd, tdim, "path", "path_"), Us[0]),
        **{k: ((wd, tdim, "test"), v) for k, v in mean_var.items()},
        "widths": ((wd, "layer_width"), np.array(widths_full, dtype=np.int64)),
        "y_test": (("test",), np.asarray(task.y_test)),
        "min_eig_U": ((wd, tdim, "order_parameter"), min_eig),
        "status": ((wd, tdim), status.astype(str)),
    }
    for k, v in scal.items():
        v = v.astype(np.int8) if k in ("converged", "hessian_pd") else v.astype(np.int64) if k == "iterations" else v
        data[k] = ((wd, tdim), v)
    coords = {
        wd: [w[0] for w in widths_full],
        tdim: list(temperatures),
        "path": task.path_labels,
        "path_": task.path_labels,
        "order_parameter": [f"U_{l}" for l in range(1, L + 1)] + ["U_a"],
        "subset": list(subsets),
    }
    for l in range(2, L + 1):
        name = f"U_{l}"
        data[name] = ((wd, tdim, f"{name}_row", f"{name}_col"), Us[l - 1])
        coords[f"{name}_row"] = coords[f"{name}_col"] = _multi_labels(task.head_names, l)
    data["gp_mean"] = (("subset", tdim, "test"), gp["gp_mean"])
    data["gp_var"] = (("subset", tdim, "test"), gp["gp_var"])
    for m in METRICS:
        data[f"gp_{m}"] = (("subset", tdim), gp[f"gp_{m}"])
    attrs = {
        "task": task.name,
        "task_meta": json.dumps(dict(task.meta)),
        "heads": json.dumps(list(spec.heads)),
        "head_names": json.dumps([list(h) for h in task.head_names]),
        "gp_subsets": json.dumps({k: [list(map(int, h)) for h in v] for k, v in subsets.items()}),
        "variances": json.dumps(list(spec.variances)),
        "readout": spec.readout,
        "n_train": int(task.n_train),
        "tol": float(tol),
    }
    return xr.Dataset(data, coords=coords, attrs=attrs)


def scan(
    task,
    spec,
    widths,
    temperatures,
    *,
    tol: float = 1e-9,
    max_iter: int = 200,
    warm_start: bool = True,
    gp_subsets: dict | None = None,
    progress: bool = False,
    path_space: str = "auto",
) -> xr.Dataset:
    """Solve the theory at every ``width`` x ``temperature`` for the network ``spec`` on ``task``.

    ``spec`` gives the heads, variances and readout (its own width and temperature are not used);
    ``widths``: one width or the ``L + 1`` widths per entry; ``gp_subsets``: ``{name: keep}`` with
    ``keep[l]`` the 0-based heads kept in layer ``l`` (GP baselines on path subsets); ``path_space``: the route
    of every solve and prediction (:func:`bayes_attn.linalg.use_path_space`, docs/theory.md §4.10).
    """
    order = np.argsort([spec.with_(width=w).widths[0] for w in widths], kind="stable")
    widths = [widths[k] for k in order]
    temperatures = sorted({float(t) for t in temperatures})
    subsets = {"all": [list(range(h)) for h in spec.heads], **(gp_subsets or {})}
    sols = solve_grid(
        task,
        spec,
        widths,
        temperatures,
        tol=tol,
        max_iter=max_iter,
        warm_start=warm_start,
        progress=progress,
        path_space=path_space,
    )
    gp = gp_baselines(task, spec, temperatures, subsets, path_space)
    return grid_dataset(task, spec, widths, temperatures, sols, gp, subsets, tol, path_space)


def scan_ok(ds: xr.Dataset) -> bool:
    """True when every solve converged with a positive-definite Hessian."""
    return bool(np.all(ds["converged"].values == 1) and np.all(ds["hessian_pd"].values == 1))


def read_theory(path, required=("U", "predictor_mean", "accuracy")) -> xr.Dataset:
    """Open a theory file written by ``bayes-attn theory`` (loaded, file closed).

    Raises ``InputError`` naming the file when it is missing, not netCDF, or lacks one of
    the ``required`` variables.
    """
    p = Path(path)
    ds = load_netcdf(p, "theory", xr.open_dataset)
    for key in required:
        if key not in ds:
            raise InputError(f"theory: {str(p)!r} has no variable {key!r} (not written by `bayes-attn theory`?)")
    return ds


__all__ = [
    "scan",
    "scan_ok",
    "read_theory",
    "solve_grid",
    "solve_with_warm_start",
    "gp_baselines",
    "grid_dataset",
    "METRICS",
]
