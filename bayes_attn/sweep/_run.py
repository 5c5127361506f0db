"""Running a sweep on Dask distributed (an embedded ``LocalCluster`` or an existing scheduler) and
assembling ``DIR/sweep.nc``.

* ``LocalCluster``: worker processes (spawned, one thread each), ``--workers`` defaulting to the
  number of cores; worker ``i`` pins its threads to the ``i``-th core it may use (``_pin.PinWorkers``: without
  that, two JAX workers on two cores ran 30-90x slower than one), limits XLA's Eigen kernels to one
  thread (``XLA_FLAGS``, set before the worker starts JAX) and uses the persistent compilation cache; a cell whose worker dies is retried once
  (``distributed.scheduler.allowed-failures = 1``).
* ``--scheduler tcp://HOST:PORT``: submit to a running cluster (``dask scheduler`` / ``dask worker``,
  dask-jobqueue on SLURM/PBS, Kubernetes).  Its workers need ``bayes_attn`` installed and the same
  file system for ``DIR``; start them with ``--nthreads 1``, each pinned to its own cores (``taskset``;
  README, "Sweeps on a cluster").
* ``workers = 0``: every cell in this process, in order (no Dask; for debugging and small grids).

Within a worker, cells with the same array shapes share compiled programs (traced widths,
temperatures, seeds and variances; :mod:`bayes_attn.inference._runner`).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import xarray as xr

from .._cache import cache_dir, usable_cores, with_single_thread_flags
from .._errors import InputError
from ._cell import ROW, run_cell
from ._grid import Sweep, axis_names


def check_writable(out: Path) -> None:
    """Create ``out/cells`` and prove it is writable (else one-line :class:`InputError`)."""
    try:
        (out / "cells").mkdir(parents=True, exist_ok=True)
        probe = out / "cells" / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"out: cannot write to {str(out)!r} ({exc.strerror or type(exc).__name__})") from None


#: how long ``--scheduler`` is tried before the sweep gives up (Dask's client retries a refused connection until then)
CONNECT_TIMEOUT = "10s"


def open_client(workers: int | None, scheduler: str | None):
    """``(client, cluster)``: a client of ``scheduler``, or of a new ``LocalCluster`` (module docstring)."""
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            return Client(scheduler, timeout=CONNECT_TIMEOUT), None
        except (OSError, TimeoutError) as exc:
            raise InputError(f"scheduler: cannot reach {scheduler!r} ({type(exc).__name__})", "scheduler") from None
    n = workers or usable_cores()
    env = {"XLA_FLAGS": with_single_thread_flags(os.environ.get("XLA_FLAGS", ""))}
    folder = cache_dir()
    env["BAYES_ATTN_CACHE_DIR"] = str(folder) if folder is not None else "off"
    dask.config.set({"distributed.scheduler.allowed-failures": 1, "distributed.worker.multiprocessing-method": "spawn"})
    cluster = LocalCluster(
        n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR, env=env
    )
    client = Client(cluster)
    from ._pin import PinWorkers

    client.register_plugin(PinWorkers())
    return client, cluster


def _lost(cell, exc) -> dict:
    line = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return {"name": cell.name, "status": "failed", "error": f"worker lost or task failed ({line})"}


def run_cells(
    sweep: Sweep, out: Path, *, workers: int | None = None, scheduler: str | None = None, progress: bool = True
) -> list[dict]:
    """Compute or reuse every cell; one result dict per cell, in grid order."""
    from tqdm.auto import tqdm

    cells_dir = str(out / "cells")
    base = str(sweep.base_dir.resolve())
    bar = tqdm(total=len(sweep.cells), desc="sweep", unit="cell", disable=not progress, dynamic_ncols=True)
    results = {}
    try:
        if workers == 0 and not scheduler:
            for c in sweep.cells:
                results[c.name] = run_cell(c.raw, base, cells_dir, c.name, c.hash)
                bar.update(1)
        else:
            from distributed import as_completed

            client, cluster = open_client(workers, scheduler)
            try:
                futures = {
                    client.submit(
                        run_cell, c.raw, base, cells_dir, c.name, c.hash, key=f"cell-{c.hash}", pure=False, retries=1
                    ): c
                    for c in sweep.cells
                }
                for fut in as_completed(futures):
                    c = futures[fut]
                    try:
                        results[c.name] = fut.result()
                    except Exception as exc:  # KilledWorker after the retry, cancelled, ...
                        results[c.name] = _lost(c, exc)
                    bar.update(1)
                    bar.set_postfix(failed=sum(r["status"] == "failed" for r in results.values()))
            finally:
                client.close()
                if cluster is not None:
                    cluster.close()
    finally:
        bar.close()
    return [results[c.name] for c in sweep.cells]


def sweep_dataset(sweep: Sweep, results: list[dict]) -> xr.Dataset:
    """``sweep.nc``: one dimension per axis, the cell summaries (:data:`~._cell.ROW`), file name, status, error."""
    shape = sweep.shape
    data = {k: np.full(shape, np.nan) for k in ROW}
    data["converged"] = np.zeros(shape, dtype=np.int8)
    data["divergences"] = np.full(shape, -1, dtype=np.int64)
    text = {k: np.empty(shape, dtype=object) for k in ("cell", "status", "error")}
    for c, r in zip(sweep.cells, results):
        for k in ROW:
            if k in r:
                data[k][c.index] = r[k]
        text["cell"][c.index] = f"cells/{c.name}.nc"
        text["status"][c.index] = r["status"]
        text["error"][c.index] = r.get("error", "")
    dims = list(sweep.names)
    variables = {k: (dims, v) for k, v in data.items()}
    variables.update({k: (dims, v.astype(str)) for k, v in text.items()})
    coords = {n: list(v) for n, v in zip(sweep.names, sweep.values)}
    for name, paired, (keys, entries) in zip(sweep.names, sweep.paired, sweep.settings):
        if paired:  # each key of a paired axis as a coordinate along it (e.g. P and width along size)
            for short, column in zip(axis_names(keys), zip(*entries)):
                if short not in coords:
                    coords[short] = (name, list(column))
    attrs = {
        "keys": ",".join(sweep.keys),
        "config": sweep.text,
        "converged": "every gate of bayes-attn diagnose holds (bayes_attn.diagnostics.summarize)",
    }
    return xr.Dataset(variables, coords=coords, attrs=attrs)


__all__ = ["run_cells", "sweep_dataset", "open_client", "check_writable"]
