"""Shared fixtures.  Four host devices so that tests can shard chains over 1, 2 and 4 of them.

Every test process (and the processes tests start) runs XLA's Eigen kernels on one CPU thread, and each
pytest-xdist worker is pinned to its own core: pytest-xdist runs one process per core, and JAX processes
fighting over XLA's thread pools waste most of the CPU (docs/design.md).  The persistent compilation cache (bayes_attn._cache) is shared by the test
processes of a session only when ``BAYES_ATTN_CACHE_DIR`` is set (off by default, see below).
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false"
if "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _ONE_THREAD).strip()
if "xla_force_host_platform_device_count" not in os.environ["XLA_FLAGS"]:
    os.environ["XLA_FLAGS"] += " --xla_force_host_platform_device_count=4"
# The persistent compilation cache is OFF in the tests and the processes they start (set
# BAYES_ATTN_CACHE_DIR to turn it on): CI starts from an empty cache, so it saves little there.  (One
# suite run on 2026-11-30 lost a worker to a segmentation fault inside XLA's executable.serialize(); the
# cause was found on 2026-12-01: the worker had run out of memory maps, see _bounded_memory_maps below.)
os.environ.setdefault("BAYES_ATTN_CACHE_DIR", "off")

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


@pytest.fixture(autouse=True)
def _bounded_memory_maps():
    """A test worker compiles hundreds of programs and would run out of memory maps (a segfault inside
    XLA; see bayes_attn._cache.release_compiled_programs): drop them past half the kernel's limit."""
    yield
    release_compiled_programs()


@pytest.fixture
def tiny_task():
    return random_task()
