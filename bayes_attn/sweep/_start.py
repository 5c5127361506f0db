"""A sweep's ``LocalCluster`` started in the background while its script prepares the sweep.

A script that computes something before its sweep (the main job solves its theory grid, on one Eigen thread:
``examples/markov_accuracy_vs_width.py``) leaves a core idle meanwhile.  :func:`start_cluster` opens the cluster
(:func:`._run.open_client`) on a thread and has every worker import what a cell imports, so that the sweep,
given the handle (``run_sweep(..., cluster=handle)``), starts its cells on workers that are up and have loaded
JAX and the package, instead of waiting for both (docs/design.md, "The main job's cluster").
"""

from __future__ import annotations

import threading


def _import_cell_modules() -> None:
    """What a cell imports before its first computation (run on each worker)."""
    from .._cache import enable_compilation_cache, limit_xla_threads

    limit_xla_threads()
    enable_compilation_cache()
    import jax

    from ..inference import parse_config, remove_checkpoint, sample, write_netcdf, write_run  # noqa: F401
    from ..theory import scan  # noqa: F401

    jax.devices()  # and the backend, as the first computation would


class StartedCluster:
    """A cluster being opened on a thread: :meth:`get` waits for ``(client, cluster)`` (raising what the start
    raised), :meth:`close` shuts it down (once; also when it was never used)."""

    def __init__(self, workers: int | None):
        self._result: dict = {}
        self._closed = False
        self._thread = threading.Thread(target=self._start, args=(workers,), name="bayes-attn-cluster", daemon=True)
        self._thread.start()

    def _start(self, workers):
        from ._run import open_client

        try:
            client, cluster = open_client(workers, None)
            self._result["pair"] = (client, cluster)
            client.run(_import_cell_modules)
        except BaseException as exc:  # handed to the thread that calls get()
            self._result["error"] = exc

    def get(self):
        """``(client, cluster)`` once the cluster is up and its workers have imported the cell's modules."""
        self._thread.join()
        if "error" in self._result:
            self.close()
            raise self._result["error"]
        return self._result["pair"]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._thread.join()
        client, cluster = self._result.get("pair", (None, None))
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()


def start_cluster(workers: int | None = None) -> StartedCluster:
    """Start a sweep's ``LocalCluster`` of ``workers`` processes (default: one per usable core) in the background;
    pass the handle to :func:`bayes_attn.sweep.run_sweep`, which closes it."""
    return StartedCluster(workers)


__all__ = ["StartedCluster", "start_cluster"]
