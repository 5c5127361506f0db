"""The Dask worker plugin that pins each ``LocalCluster`` worker to its own core (kept apart so that
``distributed`` is imported only when a cluster is opened)."""

from __future__ import annotations

from distributed.diagnostics.plugin import WorkerPlugin

from .._cache import pin_to_one_core


class PinWorkers(WorkerPlugin):
    """A worker named ``i`` (``LocalCluster`` names them 0, 1, ...) pins all its threads to the ``i``-th
    of the cores it may use (:func:`bayes_attn._cache.pin_to_one_core`) when it starts, before any
    cell runs JAX; a worker with another name (an external cluster's) is left as it is."""

    name = "bayes-attn-pin-workers"
    idempotent = True

    def setup(self, worker):
        try:
            index = int(worker.name)
        except (TypeError, ValueError):
            return
        worker.bayes_attn_cpu = pin_to_one_core(index)
