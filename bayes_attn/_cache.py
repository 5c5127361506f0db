"""JAX's persistent compilation cache for the command line and sweep workers.

Compiling the samplers and the theory solver takes most of a short run (the profile in
docs/design.md, "Speed: profile and floor", splits runs into import, compilation and sampling).
With the persistent cache a second process that compiles the same program (same shapes, same
code) loads it from disk instead.

Folder: ``$BAYES_ATTN_CACHE_DIR`` if set (``off`` disables the cache), else one folder per JAX version,
``$XDG_CACHE_HOME/bayes_attn/jax-<version>`` (``~/.cache/bayes_attn/jax-0.12.0.1``): programs compiled by
one JAX version are never loaded by another, so a new version starts a new folder and the old one can be
deleted whole.  Every program is cached, however short its compilation
(``jax_persistent_cache_min_compile_time_secs = 0``).  Growth *(project choice)*: when the cache is
turned on and its folder holds more than :data:`MAX_BYTES`, the least recently modified entries are
deleted until it holds three quarters of that (:func:`prune`; JAX's own eviction,
``jax_compilation_cache_max_size``, needs the ``filelock`` package and turns the cache off without it).
docs/design.md, "Compilation cache", gives the measured size of a run's entries.  The subfolder ``exported``
holds traced programs (:mod:`bayes_attn._programs`), pruned the same way at an eighth of that size, and
``diagnostics`` the convergence tables of runs (:mod:`bayes_attn.diagnostics._table_cache`), at a sixteenth.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ._cpus import allowed_cpus, pin_to_cpus
from ._threads import SINGLE_THREAD_XLA_FLAGS, limit_native_threads, limit_xla_threads, with_single_thread_flags

ENV = "BAYES_ATTN_CACHE_DIR"
#: subfolder of the cache folder holding traced programs (:mod:`bayes_attn._programs`)
EXPORTED = "exported"
#: subfolder of the cache folder holding convergence tables (:mod:`bayes_attn.diagnostics._table_cache`)
DIAGNOSTICS = "diagnostics"
#: size above which JAX evicts the least recently used cache entries (bytes)
MAX_BYTES = 2 * 1024**3


def _jax_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("jax")
    except metadata.PackageNotFoundError:  # pragma: no cover - jax is a dependency
        return "unknown"


def cache_dir() -> Path | None:
    """The cache folder, or ``None`` when disabled (``BAYES_ATTN_CACHE_DIR=off``)."""
    value = os.environ.get(ENV)
    if value is not None:
        return None if value.strip().lower() in ("", "0", "off", "none", "false") else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bayes_attn" / f"jax-{_jax_version()}"


def prune(folder, max_bytes: int = MAX_BYTES) -> int:
    """Delete the least recently modified files of ``folder`` while it holds more than ``max_bytes``, down to
    three quarters of it; returns the number of files deleted (a file another process removed is skipped)."""
    files = []
    for p in Path(folder).iterdir():
        try:
            st = p.stat()
        except OSError:
            continue
        if p.is_file():
            files.append((st.st_mtime, st.st_size, p))
    total = sum(size for _, size, _ in files)
    if total <= max_bytes:
        return 0
    removed = 0
    for _, size, p in sorted(files, key=lambda t: t[0]):
        if total <= 0.75 * max_bytes:
            break
        try:
            p.unlink()
        except OSError:
            continue
        total -= size
        removed += 1
    return removed


def enable_compilation_cache(path=None) -> Path | None:
    """Turn on JAX's persistent compilation cache at ``path`` (default :func:`cache_dir`); returns the folder.

    Safe to call several times and before or after JAX has compiled anything; a folder that cannot
    be created leaves the cache off (compilation still works).
    """
    import jax

    folder = Path(path) if path is not None else cache_dir()
    if folder is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        prune(folder)
        if (folder / EXPORTED).is_dir():
            prune(folder / EXPORTED, MAX_BYTES // 8)
        if (folder / DIAGNOSTICS).is_dir():
            prune(folder / DIAGNOSTICS, MAX_BYTES // 16)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return folder


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, e.g. a container's or a batch job's share),
    not the machine's count."""
    return max(len(allowed_cpus()), 1)


def pin_to_one_core(index: int, *, one_native_thread: bool = True) -> int | None:
    """Pin every thread of this process (and so the threads it starts later) to one CPU: the
    ``index``-th, modulo their number, of the CPUs this process may use; returns it (``None`` where
    the OS has no affinity call).  For processes whose place is given (a sweep's worker ``i``, pytest-xdist
    worker ``gwK``); a process that must find a free core claims one (:func:`bayes_attn._cpus.claim_cpus`).
    *(measured, docs/design.md "Several JAX processes on few cores")* Unpinned, two JAX processes on the
    2-core machine ran a loop of small jitted programs 30-90x slower than one alone, whatever ``XLA_FLAGS``
    said; pinned one per core, each ran as fast as one alone.  Call it before the process first runs a JAX
    computation, so that XLA's thread pools start pinned.

    ``one_native_thread`` (default): also limit the native thread pools of BLAS/LAPACK and OpenMP to one
    thread (:func:`limit_native_threads`; pinned without it, NumPy's OpenBLAS threads spin on the one core)."""
    allowed = allowed_cpus()
    cpu = allowed[index % len(allowed)]
    if not pin_to_cpus({cpu}):
        return None
    if one_native_thread:
        limit_native_threads(1)
    return cpu


def memory_map_usage() -> tuple[int, int] | None:
    """``(memory maps of this process, the kernel's per-process limit vm.max_map_count)``; ``None``
    where ``/proc`` does not tell (not Linux)."""
    try:
        with open("/proc/self/maps", "rb") as fh:
            n = sum(1 for _ in fh)
        with open("/proc/sys/vm/max_map_count") as fh:
            return n, int(fh.read().strip())
    except (OSError, ValueError):
        return None


def release_compiled_programs(fraction: float = 0.5) -> bool:
    """Drop every compiled XLA program of this process (``jax.clear_caches()``) when its memory maps
    pass ``fraction`` of the kernel's limit; returns whether it did.

    *(measured; docs/design.md, "Compiled programs and memory maps")* Every compiled CPU executable keeps
    its JIT-loaded code in anonymous memory maps (a sampler program of a small problem: over a thousand) for
    as long as JAX's caches hold it.  A process that compiles many distinct programs (a test worker) reaches
    Linux's limit (``vm.max_map_count``) and then dies of a segmentation fault inside XLA's compiler when the
    next ``mmap`` fails.  ``jax.clear_caches()`` releases them; the price is
    recompiling what is used again.  Called between sweep cells and between tests.
    """
    usage = memory_map_usage()
    if usage is None or usage[0] < fraction * usage[1]:
        return False
    import gc

    import jax

    for drop in _RELEASE_HOOKS:  # compiled programs held outside JAX's caches (bayes_attn._programs)
        drop()
    jax.clear_caches()
    gc.collect()
    return True


#: functions that drop the compiled programs a module holds outside JAX's caches, called by
#: :func:`release_compiled_programs` (:func:`add_release_hook`)
_RELEASE_HOOKS: list = []


def add_release_hook(drop) -> None:
    """Have :func:`release_compiled_programs` call ``drop()`` too (once per function)."""
    if drop not in _RELEASE_HOOKS:
        _RELEASE_HOOKS.append(drop)


#: JAX's monitoring events that make up compiling a program: tracing to a jaxpr, lowering to MLIR and XLA's
#: backend compilation (a persistent-cache hit skips the last one).
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


class CompileTimer:
    """Seconds this process spends compiling inside a ``with`` block, from JAX's own monitoring events.

    ``seconds`` (trace + lower + XLA compile) is read after the block; the sweep stores it per cell
    (``compile_s``), next to the cell's wall time.  It is wall-clock time: the length of the union of the events'
    intervals (each ends when JAX reports it), so that compilations running at once on several threads (the
    runner compiles a program on a thread while it traces the next, ``inference._runner._compile_ahead``) and
    events nested in one another count once, and ``seconds`` never exceeds the block's wall time.
    """

    def __init__(self):
        self._spans: list[tuple[float, float]] = []

    def _listen(self, name, duration, **kwargs):
        if name in COMPILE_EVENTS:
            end = time.perf_counter()
            self._spans.append((end - float(duration), end))

    @property
    def seconds(self) -> float:
        return self.seconds_within(float("-inf"), float("inf"))

    def seconds_within(self, start: float, end: float) -> float:
        """The part of :attr:`seconds` inside the :func:`time.perf_counter` window ``[start, end]`` (a phase of
        the block: the events' union clipped to the window)."""
        total, reach = 0.0, start
        for a, b in sorted(self._spans):
            lo, hi = max(a, reach), min(b, end)
            if hi > lo:
                total += hi - lo
                reach = hi
        return total

    def __enter__(self):
        import jax.monitoring

        jax.monitoring.register_event_duration_secs_listener(self._listen)
        return self

    def __exit__(self, *exc):
        import jax.monitoring

        jax.monitoring.unregister_event_duration_listener(self._listen)
        return False


__all__ = [
    "ENV",
    "EXPORTED",
    "DIAGNOSTICS",
    "COMPILE_EVENTS",
    "CompileTimer",
    "cache_dir",
    "enable_compilation_cache",
    "limit_xla_threads",
    "with_single_thread_flags",
    "pin_to_one_core",
    "limit_native_threads",
    "usable_cores",
    "SINGLE_THREAD_XLA_FLAGS",
    "memory_map_usage",
    "release_compiled_programs",
]
