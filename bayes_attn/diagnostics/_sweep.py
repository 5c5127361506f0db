"""Reading a sweep folder (``DIR/sweep.nc`` and ``DIR/cells/``) for ``compare`` and ``report``.

``sweep.nc`` (written by ``bayes-attn sweep``) has one dimension per sweep axis, the cell summaries
(:data:`CELL_SUMMARY`, one variable each) and per cell its file (``cell``), ``status`` and ``error``.
The figures put the width (or the first axis) on the x axis, one line per combination of the other
axes, with the seed axis (if any) summarised as mean ± s.d.
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import xarray as xr

from .._errors import InputError
from .._io import load_netcdf

SEED_AXES = ("seed",)

#: the summary of one cell, one variable of ``sweep.nc`` each (written by :mod:`bayes_attn.sweep`): the entries of
#: its :func:`~bayes_attn.diagnostics.run_gaps` row a sweep keeps, then the seconds the cell took (sampling and
#: theory) and the part of them spent compiling
CELL_SUMMARY = (
    "acc_sampled",
    "acc_theory",
    "acc_gp",
    "mean_rel_err",
    "U_rel_err",
    "max_rhat",
    "min_ess_bulk",
    "divergences",
    "converged",
    "wall_s",
    "compile_s",
)


def is_sweep_dir(path) -> bool:
    return Path(path).is_dir() and (Path(path) / "sweep.nc").is_file()


def read_sweep(path) -> xr.Dataset:
    """``sweep.nc`` of a sweep folder (loaded, file closed); :class:`InputError` if missing or not a sweep."""
    ds = load_netcdf(Path(path) / "sweep.nc", "sweep", xr.open_dataset)
    for k in ("acc_sampled", "acc_theory", "cell", "status"):
        if k not in ds:
            raise InputError(
                f"sweep: {str(Path(path) / 'sweep.nc')!r} has no variable {k!r} (not written by `bayes-attn sweep`?)"
            )
    return ds


def cell_paths(path, ds: xr.Dataset) -> list[tuple[str, Path, Path]]:
    """``(name, run file, theory file)`` of every cell that did not fail."""
    out = []
    for cell, status in zip(np.ravel(ds["cell"].values), np.ravel(ds["status"].values)):
        if str(status) == "failed":
            continue
        run = Path(path) / str(cell)
        out.append((run.stem, run, run.with_name(run.stem + ".theory.nc")))
    return out


def _x_axis(ds) -> str:
    return "width" if "width" in ds.dims else list(ds.dims)[0]


def _groups(ds, x):
    """``(label, sub-dataset over (x[, seed]))`` for every combination of the other axes."""
    others = [d for d in ds.dims if d != x and d not in SEED_AXES]
    if not others:
        yield "", ds
        return
    stacked = ds.stack(_g=others)
    for k in range(stacked.sizes["_g"]):
        sub = stacked.isel(_g=k)
        label = ", ".join(f"{d}={sub[d].item()}" for d in others)
        yield label, sub.drop_vars(["_g"] + others, errors="ignore")


def _over_seeds(da):
    seeds = [d for d in da.dims if d in SEED_AXES]
    if not seeds:
        return da.values, None
    return da.mean(seeds).values, da.std(seeds).values if da.sizes[seeds[0]] > 1 else None


def sweep_figures(ds: xr.Dataset) -> dict:
    """Accuracy (theory, sampled, GP) and the relative predictor-mean gap over the sweep's x axis."""
    import matplotlib.pyplot as plt

    x = _x_axis(ds)
    xs = ds[x].values
    log = x == "width" or (np.issubdtype(np.asarray(xs).dtype, np.number) and np.all(np.asarray(xs) > 0))
    fig_a, ax_a = plt.subplots(figsize=(5.4, 3.9))
    fig_e, ax_e = plt.subplots(figsize=(5.4, 3.9))
    for k, (label, sub) in enumerate(_groups(ds, x)):
        c = f"C{k}"
        th, _ = _over_seeds(sub["acc_theory"])
        sa, sd = _over_seeds(sub["acc_sampled"])
        ax_a.plot(xs, 100 * th, "-", color=c, label=f"theory {label}".strip())
        ax_a.errorbar(
            xs,
            100 * sa,
            yerr=None if sd is None else 100 * sd,
            fmt="o",
            mfc="white",
            color=c,
            capsize=3,
            label=f"sampled {label}".strip(),
        )
        if "acc_gp" in sub:
            gp, _ = _over_seeds(sub["acc_gp"])
            ax_a.plot(xs, 100 * gp, ":", color=c, lw=1, label=f"GP {label}".strip())
        err, err_sd = _over_seeds(sub["mean_rel_err"])
        ax_e.errorbar(xs, err, yerr=err_sd, fmt="o-", color=c, capsize=3, label=label or None)
    for ax in (ax_a, ax_e):
        ax.set_xlabel(x)
        if log:
            ax.set_xscale("log")
    ax_a.set_ylabel("test accuracy of the mean predictor (%)")
    ax_e.set_yscale("log")
    ax_e.set_ylabel("||<f>_sampled - <f>_theory|| / ||<f>_theory||")
    seeds = [d for d in ds.dims if d in SEED_AXES]
    note = f" (mean ± s.d. over {ds.sizes[seeds[0]]} seeds)" if seeds else ""
    ax_a.set_title("theory vs sampled" + note, fontsize=9)
    ax_e.set_title("sampled vs theory predictor mean" + note, fontsize=9)
    for fig, ax in ((fig_a, ax_a), (fig_e, ax_e)):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
        fig.tight_layout()
    return {"sweep_accuracy.png": fig_a, "sweep_mean_error.png": fig_e}


#: the columns of the overview table (:func:`overview_rows`): the cell summaries, then the cell's status
TABLE_COLUMNS = CELL_SUMMARY + ("status",)


def overview_rows(ds: xr.Dataset) -> list[dict]:
    """One dict per cell: its axis values and :data:`TABLE_COLUMNS`."""
    flat = ds.stack(_cell=list(ds.dims))
    rows = []
    for k in range(flat.sizes["_cell"]):
        c = flat.isel(_cell=k)
        row = {d: c[d].item() for d in ds.dims}
        row.update({v: c[v].item() for v in TABLE_COLUMNS if v in ds})
        row["error"] = str(c["error"].item()) if "error" in ds else ""
        rows.append(row)
    return rows


def overview_html(ds: xr.Dataset) -> str:
    rows = overview_rows(ds)
    cols = list(ds.dims) + [c for c in TABLE_COLUMNS if c in ds]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = []
    for r in rows:
        cells = []
        for c in cols:
            v = r[c]
            cls = ""
            if c == "converged":
                cls, v = ("pass", "PASS") if int(v) else ("fail", "FAIL")
            if c == "status" and v == "failed":
                cls, v = "fail", f"failed: {r['error']}"
            txt = f"{v:.4g}" if isinstance(v, float) else str(v)
            cells.append(f'<td class="{cls}">{html.escape(txt)}</td>' if cls else f"<td>{html.escape(txt)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>" + "".join(body) + "</table>"


def sweep_report_html(ds: xr.Dataset, title: str) -> str:
    """The body of a sweep report: overview table and the figures over the sweep axes."""
    from ._plots import png_base64  # matplotlib: imported by reports only, never by the sweep's workers

    n = int(np.prod([ds.sizes[d] for d in ds.dims]))
    ok = int(ds["converged"].sum()) if "converged" in ds else 0
    failed = int((ds["status"] == "failed").sum())
    parts = [
        f"<h2>{html.escape(title)}</h2>",
        f"<p>{n} cells over {', '.join(f'{d} ({ds.sizes[d]})' for d in ds.dims)}: {ok} PASS every "
        f"convergence gate, {failed} failed.</p>",
        overview_html(ds),
    ]
    for name, fig in sweep_figures(ds).items():
        parts.append(f'<img alt="{html.escape(name)}" src="data:image/png;base64,{png_base64(fig)}">')
    return "\n".join(parts)


__all__ = [
    "is_sweep_dir",
    "read_sweep",
    "cell_paths",
    "sweep_figures",
    "overview_rows",
    "overview_html",
    "sweep_report_html",
    "CELL_SUMMARY",
    "TABLE_COLUMNS",
]
