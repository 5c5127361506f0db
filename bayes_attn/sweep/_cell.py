"""One cell of a sweep: sample, solve the theory at the cell's width and temperature, summarise.

Runs in a Dask worker process (or in the calling process).  Files, under ``DIR/cells/``:

* ``<name>.nc``: the run (the same DataTree as ``bayes-attn sample``), with the cell's config hash
  in its attribute ``cell_hash``; written atomically;
* ``<name>.theory.nc``: the saddle point at the cell's width and temperature on the same data
  (the layout of ``bayes-attn theory``);
* ``<name>.nc.ckpt.npz`` (and its parts) while sampling: a killed sweep resumes the cell from it.

``sweep.nc`` holds per cell ``wall_s`` (sampling + theory) and ``compile_s``, the part of it spent
tracing, lowering and compiling (:class:`bayes_attn._cache.CompileTimer`, JAX's monitoring events):
near zero for a cell whose shapes an earlier cell of the same worker compiled.

A cell whose run and theory files exist, are readable and carry the same hash is **reused**: nothing
is recomputed or rewritten.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path

import numpy as np

from .._cache import CompileTimer, enable_compilation_cache, limit_xla_threads, release_compiled_programs
from .._errors import InputError
from ..diagnostics import CELL_SUMMARY

#: the summary of a cell, one variable of ``sweep.nc`` each: :data:`bayes_attn.diagnostics.CELL_SUMMARY`, the list
#: the sweep's readers (``compare``, ``report``) read back
ROW = CELL_SUMMARY


def cell_files(cells_dir, name: str) -> tuple[Path, Path, Path]:
    """``(run, theory, checkpoint)`` paths of cell ``name``."""
    d = Path(cells_dir)
    return d / f"{name}.nc", d / f"{name}.theory.nc", d / f"{name}.nc.ckpt.npz"


def _reusable(run_file: Path, theory_file: Path, cell_hash: str):
    """``(run DataTree, theory Dataset)`` when both files are complete and made from ``cell_hash``, else ``None``."""
    from ..inference import read_run
    from ..theory import read_theory

    if not (run_file.is_file() and theory_file.is_file()):
        return None
    try:
        dt = read_run(run_file)
        th = read_theory(theory_file)
    except InputError:
        return None
    if dt.attrs.get("cell_hash") != cell_hash or th.attrs.get("cell_hash") != cell_hash:
        return None
    return dt, th


def summarise(dt, theory, thresholds, name: str) -> dict:
    """The :data:`ROW` of a cell from its run and theory (:func:`bayes_attn.diagnostics.run_gaps`) under the
    config's gates (:class:`~bayes_attn.config.Thresholds`)."""
    from ..diagnostics import run_gaps

    g = run_gaps(theory, dt, name=name, thresholds=thresholds)
    row = {k: g[k] for k in ROW if k in g}
    row["wall_s"] = float(dt.attrs.get("wall_time_s", np.nan)) + float(theory.attrs.get("wall_time_s", 0.0))
    row["compile_s"] = float(dt.attrs.get("compile_time_s", np.nan)) + float(theory.attrs.get("compile_time_s", 0.0))
    return row


def run_cell(raw: dict, base_dir: str, cells_dir: str, name: str, cell_hash: str, progress: bool = False) -> dict:
    """Compute (or reuse) one cell; returns ``{"name", "status", "error", **ROW}``.

    ``status`` is ``"reused"``, ``"done"`` or ``"failed"``; a failure (an exception, or non-finite
    predictions) is returned with its one-line ``error``, never raised, so the other cells go on.
    """
    limit_xla_threads()
    enable_compilation_cache()
    release_compiled_programs()  # a worker that has compiled many shapes would run out of memory maps
    from ..inference import parse_config, remove_checkpoint, sample, write_netcdf, write_run
    from ..theory import scan

    run_file, theory_file, ckpt = cell_files(cells_dir, name)
    out = {"name": name, "status": "failed", "error": ""}
    try:
        cfg = parse_config(raw, Path(base_dir))
        old = _reusable(run_file, theory_file, cell_hash)
        if old is not None:
            out.update(summarise(*old, cfg.diagnostics, name), status="reused")
            return out
        task = cfg.task()
        spec = cfg.spec(task)
        t0 = time.perf_counter()
        with CompileTimer() as ct:
            theory = scan(task, spec, [spec.widths], [spec.temperature], **_theory_options(raw))
        theory.attrs.update(cell_hash=cell_hash, wall_time_s=time.perf_counter() - t0, compile_time_s=ct.seconds)
        sampler = cfg.sampler.__class__(**{**vars(cfg.sampler), "progress_bar": progress})
        with CompileTimer() as cs:
            dt = sample(
                task,
                spec,
                sampler,
                config_text=_cell_text(raw),
                checkpoint=ckpt,
                resume=True,
                basis=cfg.basis(),
                attrs={"cell_hash": cell_hash, "cell": name},
            )
        dt.attrs["compile_time_s"] = cs.seconds  # of this process's part of the run (a resumed run: the last part)
        if not np.all(np.isfinite(dt["posterior"].ds["f"].values)):
            raise FloatingPointError("non-finite predictions in the posterior draws")
        write_netcdf(theory, theory_file)
        write_run(dt, run_file)
        remove_checkpoint(ckpt)
        out.update(summarise(dt, theory, cfg.diagnostics, name), status="done")
    except Exception as exc:  # a failed cell is recorded, the sweep goes on
        line = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
        out["error"] = line
        out["traceback"] = traceback.format_exc(limit=6)
    return out


def _theory_options(raw: dict) -> dict:
    tab = raw.get("theory", {})
    return {k: tab[k] for k in ("tol", "max_iter") if k in tab}


def _toml_value(v) -> str:
    import json

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return json.dumps(v)  # strings, ints, floats: JSON spellings are TOML


def to_toml(raw: dict) -> str:
    """TOML text of a config dict of tables (scalars, lists, nested tables); ``tomllib`` reads it back."""
    lines = []

    def table(name, tab):
        scalars = {k: v for k, v in tab.items() if not isinstance(v, dict)}
        lines.append(f"[{name}]")
        lines.extend(f"{k} = {_toml_value(v)}" for k, v in scalars.items())
        for k, v in tab.items():
            if isinstance(v, dict):
                table(f"{name}.{k}", v)

    for name, tab in raw.items():
        if name != "sweep" and isinstance(tab, dict):
            table(name, tab)
    return "\n".join(lines) + "\n"


def _cell_text(raw: dict) -> str:
    return "# a cell of a bayes-attn sweep; this is its whole run config\n" + to_toml(raw)


__all__ = ["ROW", "run_cell", "cell_files", "summarise", "to_toml"]
