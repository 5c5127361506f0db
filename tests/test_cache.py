"""bayes_attn._cache: where the persistent compilation cache lives, how it is turned off, and that a second
process loads a program the first one compiled (JAX's persistent cache on CPU)."""

import os
import subprocess
import sys

import pytest

from bayes_attn._cache import (
    SINGLE_THREAD_XLA_FLAGS,
    cache_dir,
    limit_xla_threads,
    with_single_thread_flags,
    memory_map_usage,
    release_compiled_programs,
)


@pytest.mark.parametrize("value", ["off", "OFF", "0", "none", "false", ""])
def test_off_values_disable_the_cache(monkeypatch, value):
    monkeypatch.setenv("BAYES_ATTN_CACHE_DIR", value)
    assert cache_dir() is None


def test_default_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("BAYES_ATTN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    import jax

    assert cache_dir() == tmp_path / "bayes_attn" / f"jax-{jax.__version__}"  # one folder per JAX version


def test_prune_deletes_the_oldest_entries_down_to_three_quarters(tmp_path):
    from bayes_attn._cache import prune

    for i in range(10):  # 10 files of 100 bytes, file i modified at time 1000 + i
        p = tmp_path / f"e{i}-cache"
        p.write_bytes(b"x" * 100)
        os.utime(p, (1000 + i, 1000 + i))
    assert prune(tmp_path, max_bytes=1000) == 0  # at the limit: nothing goes
    assert prune(tmp_path, max_bytes=800) == 4  # 1000 > 800: down to <= 600, oldest first
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"e{i}-cache" for i in range(4, 10)]


def test_a_limited_process_and_its_workers_carry_the_same_flags(monkeypatch):
    """JAX's persistent cache keys programs by XLA_FLAGS: the sweep's workers must get the very string of a parent
    that limited itself, not the flag twice (the main job's theory programs would not be theirs)."""
    from bayes_attn.sweep import _run

    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
    limit_xla_threads()
    parent = os.environ["XLA_FLAGS"]
    assert with_single_thread_flags(parent) == parent
    assert with_single_thread_flags("") == SINGLE_THREAD_XLA_FLAGS
    seen = {}

    class Cluster:
        def __init__(self, **kw):
            seen.update(kw)

    monkeypatch.setattr("distributed.LocalCluster", Cluster)
    monkeypatch.setattr("distributed.Client", lambda cluster: (_ for _ in ()).throw(RuntimeError("stop")))
    with pytest.raises(RuntimeError, match="stop"):
        _run.open_client(1, None)
    assert seen["env"]["XLA_FLAGS"] == parent


def test_limit_xla_threads_adds_the_flag_once(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    limit_xla_threads()
    limit_xla_threads()
    flags = os.environ["XLA_FLAGS"]
    assert flags.count(SINGLE_THREAD_XLA_FLAGS) == 1 and "device_count=2" in flags


PROBE = r"""
import logging, sys
import jax, jax.numpy as jnp
from bayes_attn._cache import enable_compilation_cache
assert enable_compilation_cache() is not None
hits = []
class H(logging.Handler):
    def emit(self, r):
        if "cache hit" in r.getMessage().lower():
            hits.append(r.getMessage())
logging.getLogger("jax._src.compiler").addHandler(H())
logging.getLogger("jax._src.compiler").setLevel(logging.DEBUG)
f = jax.jit(lambda x: jnp.sin(x) @ x.T + 1.0)
print(float(f(jnp.ones((7, 5))).sum()), len(hits))
"""


def test_second_process_loads_the_compiled_program_from_disk(tmp_path):
    env = {**os.environ, "BAYES_ATTN_CACHE_DIR": str(tmp_path / "cache")}
    out = [
        subprocess.run(
            [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert out[0][0] == out[1][0]  # same value
    assert int(out[0][1]) == 0 and int(out[1][1]) >= 1, out  # cold, then a hit
    assert any((tmp_path / "cache").iterdir())


def test_a_test_session_shares_one_fresh_cache():
    """tests/conftest.py: every process of a test session (workers, and the processes tests start) uses one
    compilation cache folder made for the session, so a program compiled by one is loaded by the next."""
    from conftest import subprocess_env

    folder = cache_dir()
    if folder is None or not folder.name.startswith("bayes_attn-test-cache-"):
        pytest.skip("BAYES_ATTN_CACHE_DIR was set for this session")
    assert folder.is_dir() and os.environ["BAYES_ATTN_CACHE_DIR"] == str(folder)
    out = [
        subprocess.run(
            [sys.executable, "-c", PROBE], env=subprocess_env(), capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert out[0][0] == out[1][0] and int(out[1][1]) >= 1, out  # the second process read the first one's program
    assert any(folder.iterdir())


@pytest.mark.skipif(memory_map_usage() is None, reason="needs Linux /proc")
def test_release_compiled_programs_frees_their_memory_maps():
    """A sampler's compiled programs hold ~1000+ memory maps until released; below the threshold
    nothing is dropped, above it they are freed."""
    from conftest import random_task

    from bayes_attn.inference import SamplerConfig, sample

    release_compiled_programs(0.0)
    before = memory_map_usage()[0]
    task = random_task(P=5, Q=2, S=2, n0=3, heads=(1,), seed=4)
    sample(
        task,
        task.spec(width=3, temperature=0.5),
        SamplerConfig(kind="nuts", model="collapsed", chains=2, warmup=5, draws=5, seed=0, progress_bar=False),
    )
    grown = memory_map_usage()[0]
    assert grown > before + 300, (before, grown)
    assert release_compiled_programs(1.0) is False  # below the limit: kept
    assert memory_map_usage()[0] >= grown - 10
    assert release_compiled_programs(0.0) is True
    assert memory_map_usage()[0] < grown - 300, (before, grown, memory_map_usage())


BLAS_PROBE = r"""
import json, os, sys
try:                                             # start as an unpinned process would (the parent may be pinned)
    os.sched_setaffinity(0, range(os.cpu_count()))
except OSError:                                  # a cpuset smaller than the machine: keep what we have
    pass
import numpy                                     # loads OpenBLAS, sized for the cores it may use now
from threadpoolctl import threadpool_info
from bayes_attn._cache import pin_to_one_core
before = {i["internal_api"]: i["num_threads"] for i in threadpool_info()}
cpu = pin_to_one_core(0, one_native_thread=sys.argv[1] == "1")
import scipy.linalg                              # a BLAS loaded after pinning
after = [(i["filepath"], i["num_threads"]) for i in threadpool_info()]
print(json.dumps({"before": before, "after": after, "affinity": sorted(os.sched_getaffinity(0)), "cpu": cpu,
                  "env": os.environ.get("OPENBLAS_NUM_THREADS")}))
"""


def _blas_probe(one_native_thread: bool) -> dict:
    import json

    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    }
    out = subprocess.run(
        [sys.executable, "-c", BLAS_PROBE, "1" if one_native_thread else "0"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this OS")
def test_pinned_process_runs_one_blas_thread():
    """A process pinned to one core keeps one thread in every BLAS/OpenMP pool, loaded before or after the
    pin: NumPy's OpenBLAS sized for two cores and pinned to one spun its threads on that core (a matrix
    product about 180x slower, measured; bayes_attn._cache.pin_to_one_core)."""
    res = _blas_probe(True)
    assert res["affinity"] == [res["cpu"]]
    assert len(res["after"]) >= 2 and all(n == 1 for _, n in res["after"]), res["after"]
    assert res["env"] == "1"


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or os.cpu_count() < 2, reason="needs 2 cores")
def test_pinned_process_without_the_limit_keeps_its_blas_threads():
    """The failure the limit prevents, on this machine: pinned without it, OpenBLAS keeps the threads it
    started with for all cores (so the test above can fail)."""
    res = _blas_probe(False)
    if res["before"].get("openblas", 1) < 2:
        pytest.skip("OpenBLAS started with one thread here")
    assert max(n for p, n in res["after"] if "openblas" in p) >= 2


def test_compile_timer_counts_overlapping_compilations_once(monkeypatch):
    """CompileTimer.seconds is the length of the union of the events' intervals (each ending when it is reported):
    events on two threads at once, or nested, count once, so a sweep cell's compile_s stays within its wall time.
    Against the union worked out by hand."""
    import bayes_attn._cache as cache

    timer = cache.CompileTimer()
    name = cache.COMPILE_EVENTS[-1]
    for end, duration in ((10.0, 4.0), (12.0, 5.0), (11.0, 0.5), (20.0, 1.0)):  # [6, 10] [7, 12] [10.5, 11] [19, 20]
        monkeypatch.setattr(cache.time, "perf_counter", lambda end=end: end)
        timer._listen(name, duration)
    timer._listen("/jax/some/other_event", 100.0)  # not a compile event
    assert timer.seconds == pytest.approx(7.0)  # [6, 12] and [19, 20]; the plain sum of durations would be 10.5
    # a window (a phase of the block) takes the union's part inside it
    assert timer.seconds_within(0.0, 100.0) == pytest.approx(7.0)
    assert timer.seconds_within(8.0, 10.7) == pytest.approx(2.7)  # inside [6, 12]: nested [10.5, 11] adds nothing
    assert timer.seconds_within(11.5, 19.5) == pytest.approx(1.0)  # [11.5, 12] and [19, 19.5]
    assert timer.seconds_within(13.0, 18.0) == 0.0 and timer.seconds_within(21.0, 30.0) == 0.0


def test_compile_timer_stays_within_the_wall_time_of_compilations_on_threads():
    """Two programs compiled at once on two threads, with a third traced meanwhile: compile time is positive and at
    most the block's wall time."""
    import concurrent.futures
    import time

    import jax
    import jax.numpy as jnp

    from bayes_attn._cache import CompileTimer

    def program(k):
        return jax.jit(lambda x: jnp.sum(jnp.sin(x) ** k) + jnp.linalg.norm(jnp.outer(x, x) @ x))

    x = jnp.arange(1.0, 40.0)
    t0 = time.perf_counter()
    with CompileTimer() as timer, concurrent.futures.ThreadPoolExecutor(2) as pool:
        done = [pool.submit(lambda k=k: program(k).lower(x).compile()) for k in (3, 5)]
        program(7)(x).block_until_ready()
        [f.result() for f in done]
    wall = time.perf_counter() - t0
    assert 0 < timer.seconds <= wall
