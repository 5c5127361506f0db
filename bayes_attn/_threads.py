"""The thread pools of this process: the native BLAS/LAPACK and OpenMP pools, and XLA's Eigen kernels.

Pinning a process to fewer cores does not resize the pools it has already started; these functions shrink
them (docs/design.md, "Several JAX processes on few cores").  Both :mod:`bayes_attn._cpus` (a process that
claims its cores) and :mod:`bayes_attn._cache` (a sweep worker or test process given its core) size the
pools, so the functions live here, below both; they are re-exported where they were imported from before.
"""

from __future__ import annotations

import os


#: XLA flag that keeps a process's Eigen matrix kernels on one CPU thread (several JAX processes on few
#: cores fight over XLA's thread pools otherwise).  *(measured)* The TensorFlow-style token
#: ``intra_op_parallelism_threads=1`` that is sometimes added is not an XLA flag: XLA stops parsing at it,
#: so a ``--xla_force_host_platform_device_count`` placed after it was silently ignored (1 device, not 2).
SINGLE_THREAD_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false"


def with_single_thread_flags(flags: str) -> str:
    """``flags`` (an ``XLA_FLAGS`` value) with :data:`SINGLE_THREAD_XLA_FLAGS` added, unless it sets that flag
    already.  A process that limits itself and the sweep workers it starts then carry the same string: JAX's
    persistent compilation cache keys a program by ``XLA_FLAGS`` too, so only with the same string can the workers
    read the programs their parent compiled (docs/design.md, the main job's theory grid on the workers' flags)."""
    if "xla_cpu_multi_thread_eigen" in flags:
        return flags
    return (flags + " " + SINGLE_THREAD_XLA_FLAGS).strip()


def limit_xla_threads() -> None:
    """Add :data:`SINGLE_THREAD_XLA_FLAGS` to ``XLA_FLAGS`` (effective when this process has not yet
    initialised a JAX backend; XLA reads the flags then)."""
    os.environ["XLA_FLAGS"] = with_single_thread_flags(os.environ.get("XLA_FLAGS", ""))


def limit_native_threads(n: int = 1) -> None:
    """At most ``n`` threads for every BLAS/LAPACK and OpenMP pool of this process: those loaded already
    (``threadpoolctl``) and those loaded later (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``,
    ``MKL_NUM_THREADS``, read when a library loads).  *(measured, docs/design.md)* NumPy's OpenBLAS sizes
    its pool at import for every core; pinned to fewer, its threads spin waiting for each other (a matrix
    product about 180x slower)."""
    from threadpoolctl import threadpool_limits

    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(int(n))
    threadpool_limits(limits=int(n))  # kept for the process's life: no restore


__all__ = ["SINGLE_THREAD_XLA_FLAGS", "with_single_thread_flags", "limit_xla_threads", "limit_native_threads"]
