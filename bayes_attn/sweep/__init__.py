"""Sweeps: a grid of cells (widths x temperatures x seeds x data sizes x samplers ...), each a sampled
run and its theory, on Dask distributed from a laptop to a cluster; idempotent and resumable.

:func:`load_sweep` validates a SWEEP.toml; :func:`run_sweep` computes (or reuses) every cell and writes
``DIR/sweep.nc``; the CLI is ``bayes-attn sweep``.
"""

from __future__ import annotations

from pathlib import Path

from .._io import read_toml
from ..config import parse_config
from ..inference import write_netcdf
from ._cell import ROW, cell_files, run_cell, summarise, to_toml
from ._grid import Cell, Sweep, build_sweep, cell_hash
from ._run import check_writable, open_client, run_cells, sweep_dataset


def _validator(base_dir: Path):
    """``validate(raw, label)``: a cell's config parses and describes a valid network on its data; returns
    its resolved :class:`~bayes_attn.config.SamplerConfig` (defaults filled in), for the cell's hash."""
    from .._errors import InputError
    from ..theory import check_widths

    tasks = {}

    def validate(raw: dict, label: str) -> str:
        try:
            cfg = parse_config(raw, base_dir)
            key = repr(cfg.data)
            if key not in tasks:
                tasks[key] = cfg.task()
            spec = cfg.spec(tasks[key])
            if cfg.sampler.model == "order_parameters":
                check_widths(spec)
        except InputError as exc:
            raise InputError(f"{exc} (cell {label})") from None
        return cfg.sampler

    return validate


def load_sweep(path) -> Sweep:
    """Read and validate a sweep config (every cell is checked before anything runs)."""
    raw, text = read_toml(path)
    base = Path(path).parent
    return build_sweep(raw, base, text, validate=_validator(base))


def run_sweep(sweep: Sweep, out, *, workers: int | None = None, scheduler: str | None = None, progress: bool = True):
    """Compute or reuse every cell of ``sweep`` into ``out/cells/`` and write ``out/sweep.nc`` (atomically).

    Returns ``(dataset, results)``; cells that failed are in the dataset with ``status = "failed"`` and
    their error line.
    """
    out = Path(out)
    check_writable(out)
    results = run_cells(sweep, out, workers=workers, scheduler=scheduler, progress=progress)
    ds = sweep_dataset(sweep, results)
    write_netcdf(ds, out / "sweep.nc")
    return ds, results


__all__ = [
    "Cell",
    "Sweep",
    "ROW",
    "load_sweep",
    "run_sweep",
    "build_sweep",
    "run_cell",
    "run_cells",
    "sweep_dataset",
    "cell_files",
    "cell_hash",
    "summarise",
    "open_client",
    "to_toml",
]
