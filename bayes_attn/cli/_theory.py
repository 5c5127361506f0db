"""``bayes-attn theory CONFIG.toml --out THEORY.nc [--strict]``: solve the theory over a scan.

Reads ``[data]`` and ``[network]`` (width and temperature may be lists) and an optional
``[theory]`` table::

    [theory]
    tol = 1e-9            # relative gradient norm (docs/theory_solver.md)
    max_iter = 200        # Newton iterations per solve
    warm_start = true     # also start from the neighbouring larger width, keep the lower action
    path_space = "auto"   # "dense" | "path": the training set as its path-space points (docs/theory.md §4.10)
    [theory.gp_subsets]   # GP baselines on path subsets: heads kept per layer (0-based or names)
    good = [["good"], ["unif"]]
"""

from __future__ import annotations

import sys

THEORY_KEYS = {"tol", "max_iter", "warm_start", "gp_subsets", "path_space"}


def register(sub) -> None:
    p = sub.add_parser("theory", help="solve the finite-width theory over width x temperature (netCDF out)")
    p.add_argument("config", help="TOML config ([data], [network], optional [theory])")
    p.add_argument("--out", required=True, help="output .nc file")
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when any solve did not converge or has a non-positive-definite Hessian",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run, without_dask=True)  # no dask arrays: xarray need not import dask (_io.without_dask)


def _options(raw: dict, task) -> dict:
    from .._errors import InputError, one_of, positive, require

    tab = dict(raw.get("theory", {}))
    extra = sorted(set(tab) - THEORY_KEYS)
    if extra:
        raise InputError(f"theory.{extra[0]}: unknown key (allowed: {', '.join(sorted(THEORY_KEYS))})")
    tol = positive(tab.get("tol", 1e-9), "theory.tol")
    max_iter = positive(tab.get("max_iter", 200), "theory.max_iter", integer=True)
    warm = tab.get("warm_start", True)
    require(isinstance(warm, bool), "theory.warm_start", f"must be true or false, got {warm!r}")
    subsets = {}
    for name, keep in dict(tab.get("gp_subsets", {})).items():
        field = f"theory.gp_subsets.{name}"
        require(
            isinstance(keep, list) and len(keep) == len(task.heads),
            field,
            f"needs one list of heads per layer ({len(task.heads)}), got {keep!r}",
        )
        idx = []
        for l, heads in enumerate(keep):
            names = list(task.head_names[l])
            require(isinstance(heads, list) and len(heads) >= 1, field, f"layer {l + 1}: needs a non-empty list")
            row = []
            for h in heads:
                if isinstance(h, str):
                    require(h in names, field, f"layer {l + 1} has no head {h!r} (heads: {', '.join(names)})")
                    row.append(names.index(h))
                else:
                    require(
                        isinstance(h, int) and 0 <= h < len(names),
                        field,
                        f"layer {l + 1}: head index {h!r} not in 0..{len(names) - 1}",
                    )
                    row.append(h)
            idx.append(row)
        subsets[name] = idx
    from ..linalg import MODES

    route = one_of(tab.get("path_space", "auto"), MODES, "theory.path_space")
    return dict(tol=float(tol), max_iter=int(max_iter), warm_start=warm, gp_subsets=subsets, path_space=route)


def run(args) -> int:
    import json
    import warnings

    from ..inference import package_versions, write_netcdf
    from ..theory import TheoryWarning, scan, scan_ok
    from ..inference import load_config

    cfg = load_config(args.config)
    task = cfg.task()
    opts = _options(cfg.raw, task)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TheoryWarning)
        ds = scan(task, cfg.base_spec(task), cfg.widths, cfg.temperatures, progress=not args.no_progress, **opts)
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    ds.attrs["config"] = cfg.text
    ds.attrs["package_versions"] = json.dumps(package_versions())
    write_netcdf(ds, args.out)
    ok = scan_ok(ds)
    n_bad = int(((ds["converged"] == 0) | (ds["hessian_pd"] == 0)).sum())
    print(
        f"wrote {args.out}: {ds.sizes['width']} widths x {ds.sizes['temperature']} temperatures, "
        f"{'all solves converged' if ok else f'{n_bad} solve(s) FAILED'}"
    )
    for T in ds["temperature"].values:
        row = ds.sel(temperature=T)
        accs = ", ".join(f"N={int(w)}: {100 * a:.1f}%" for w, a in zip(row["width"].values, row["accuracy"].values))
        gp = 100 * float(row["gp_accuracy"].sel(subset="all"))
        print(f"  T={T:g}: accuracy {accs}; GP {gp:.1f}%")
    sys.stdout.flush()
    return 1 if (args.strict and not ok) else 0
