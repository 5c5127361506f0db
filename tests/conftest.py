"""Shared fixtures.  Four host devices so that tests can shard chains over 1, 2 and 4 of them.

Every test process (and the processes tests start) runs XLA's Eigen kernels on one CPU thread, and each
pytest-xdist worker is pinned to its own core: pytest-xdist runs one process per core, and JAX processes
fighting over XLA's thread pools waste most of the CPU (docs/design.md).  The persistent compilation cache
(bayes_attn._cache) is shared by the processes of one test session, in a folder of its own (see below).
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false"
if "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _ONE_THREAD).strip()
if "xla_force_host_platform_device_count" not in os.environ["XLA_FLAGS"]:
    os.environ["XLA_FLAGS"] += " --xla_force_host_platform_device_count=4"
# The persistent compilation cache (bayes_attn._cache) is shared by the processes of one test session: a
# fresh, empty folder per session (CI starts from nothing, and no run reads programs another session wrote),
# made by the first process that imports this file -- the pytest-xdist controller, whose workers, and the
# processes the tests start, inherit the variable -- and deleted when that process exits.  Tests compile
# many identical programs (same sampler, model and shapes), so every one after the first is read from disk.
# Set BAYES_ATTN_CACHE_DIR (``off`` disables it) to choose otherwise.  Workers drop their compiled programs
# before they run out of memory maps (_bounded_memory_maps below; an exhausted map count once crashed a
# worker inside XLA's executable.serialize()).
if "BAYES_ATTN_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    _SESSION_CACHE = tempfile.mkdtemp(prefix="bayes_attn-test-cache-")
    os.environ["BAYES_ATTN_CACHE_DIR"] = _SESSION_CACHE
    atexit.register(shutil.rmtree, _SESSION_CACHE, ignore_errors=True)

import bayes_attn  # noqa: E402,F401  (float64)
from bayes_attn._cache import pin_to_one_core  # noqa: E402

# pytest-xdist worker gwK runs on the K-th core (and so do the processes its tests start): unpinned, two JAX
# processes on two cores ran small-program loops 30-90x slower than one alone (docs/design.md).
# pin_to_one_core also limits BLAS/OpenMP to one thread: pinned without that, NumPy's OpenBLAS threads spun on the
# one core (a matrix product about 180x slower, docs/design.md).
if os.environ.get("PYTEST_XDIST_WORKER", "").startswith("gw"):
    pin_to_one_core(int(os.environ["PYTEST_XDIST_WORKER"][2:]))
from bayes_attn.inference import request_host_devices  # noqa: E402

request_host_devices(4)

from bayes_attn._cache import enable_compilation_cache, release_compiled_programs  # noqa: E402

enable_compilation_cache()

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from bayes_attn.network import HeadLayer  # noqa: E402
from bayes_attn.tasks import Task  # noqa: E402


def random_task(P=6, Q=4, S=3, n0=4, heads=(2,), seed=0, style="w", readout_names=None) -> Task:
    """A small random task with w-style (or qk-style) random attention."""
    rng = np.random.default_rng(seed)
    layers = []
    for H in heads:
        if style == "w":
            layers.append(HeadLayer.w(rng.standard_normal((H, n0, n0)), beta=0.7))
        else:
            G = 3
            layers.append(HeadLayer.qk(rng.standard_normal((H, G, n0)), rng.standard_normal((H, G, n0))))
    x_tr = rng.standard_normal((P, S, n0))
    x_te = rng.standard_normal((Q, S, n0))
    y_tr = np.sign(rng.standard_normal(P))
    y_te = np.sign(rng.standard_normal(Q))
    return Task(x_tr, y_tr, x_te, y_te, tuple(layers), name="random")


def driver_problem(heads=(2, 2)):
    """The small problem of the driver's tests (tests/test_driver.py): two layers of two w-style heads on 5 inputs
    of 3 tokens, N = 3 (the resume tests widen it to 4), ``T = 0.2``.  Tests that run the same samplers on it with
    the same settings share the session's compiled programs."""
    from bayes_attn.network import NetworkSpec

    task = random_task(P=5, Q=3, S=3, n0=3, heads=heads, seed=11)
    return task, NetworkSpec(heads=task.heads, n0=task.n0, width=3, temperature=0.2, readout="last")


#: The short run of the tests of chain layouts and of compiling once (tests/test_devices.py, tests/test_driver.py):
#: on ``driver_problem((2,))`` at width 4, four chains of 6 warm-up and 6 sampling iterations in chunks of 3, laid
#: out vectorized on one device by the tests (``devices = 1`` or ``chain_method = "vectorized"``).  Same sampler,
#: model, shapes and static settings, so those tests share their compiled programs (the session's compilation
#: cache) instead of compiling a set each.
SHORT_RUN = dict(chains=4, warmup=6, draws=6, checkpoint_every=3, progress_bar=False)
SHORT_RUN_WIDTH = 4

#: The static settings of the resume tests (tests/test_driver.py) on ``driver_problem()``: two chains, 4 warm-up
#: iterations, chunks of 2.  The compile-ahead test, the sweep tests and the Wishart driver test run the same, so
#: they share the resume tests' compiled programs (draws, seeds, widths and temperatures are traced).
RESUME_RUN = dict(chains=2, warmup=4, checkpoint_every=2, progress_bar=False)


#: XLA flags of the fast suite (a session that deselects the slow tests, as the default ``-m 'not slow'`` does):
#: its tests compile hundreds of small programs and run each briefly, so LLVM's optimisation passes cost more
#: than they save (docs/design.md, "Compilation in the tests").  Sessions that select the slow tests keep XLA's
#: default level, which the long statistical runs need and which users run; ``./run.sh test-all`` (CI) runs the
#: fast suite and then the slow set (``-m slow``) as two sessions.  Results differ between levels in the last
#: bits only (LLVM may contract a multiply and an add differently), so a test compares draws only between
#: processes of one session.
FAST_SUITE_XLA_FLAGS = "--xla_backend_optimization_level=0"


def _at_level_zero(flags: str) -> str:
    """``flags`` with :data:`FAST_SUITE_XLA_FLAGS` added, unless they already set an optimisation level."""
    return flags if "optimization_level" in flags else (flags + " " + FAST_SUITE_XLA_FLAGS).strip()


def pytest_configure(config):
    if (config.option.markexpr or "").strip() == "not slow":
        os.environ["XLA_FLAGS"] = _at_level_zero(os.environ["XLA_FLAGS"])


def pytest_collection_modifyitems(config, items):
    """Longest first: tests that declare their approximate cost (``@pytest.mark.slow(seconds=...)``, the slow
    set's longest) run before all others, in decreasing order of it (the sort is stable: the rest keep pytest's
    order).  In a two-worker session a long test that starts last keeps one worker busy after the other has
    finished; started first, the short ones fill in around it (``./run.sh test-all`` runs the slow set with
    ``--dist worksteal``, so an idle worker takes tests queued on the busy one)."""

    def cost(item) -> float:
        mark = item.get_closest_marker("slow")
        return float(mark.kwargs.get("seconds", 0)) if mark else 0.0

    items.sort(key=lambda item: -cost(item))


def smoke_env(**extra) -> dict:
    """Environment for a smoke run a test starts (an example's or a benchmark's ``--smoke`` mode): this session's
    (``subprocess_env``) at XLA's optimisation level 0 in every session.  Smoke runs are tiny and
    compile-bound, as the fast suite's tests are (an example's smoke run spends most of its time compiling,
    and LLVM's optimisation passes most of that); their outputs are checked for shape and sanity, never
    against draws of another process."""
    env = subprocess_env(**extra)
    env["XLA_FLAGS"] = _at_level_zero(env.get("XLA_FLAGS", ""))
    return env


def subprocess_env(**extra) -> dict:
    """Environment for a process a test starts: this session's XLA flags, all of them.  The same one thread and
    optimisation level make its draws equal the test process's; the same four host devices let it share the
    session's compilation cache, whose keys include the device topology (a one-device process read none of the
    programs the four-device workers wrote, and they none of its, so each compiled the samplers again)."""
    return {**os.environ, **extra}


@pytest.fixture(autouse=True)
def _bounded_memory_maps():
    """A test worker compiles hundreds of programs and would run out of memory maps (a segfault inside
    XLA; see bayes_attn._cache.release_compiled_programs): drop them past half the kernel's limit."""
    yield
    release_compiled_programs()


@pytest.fixture
def tiny_task():
    return random_task()
