"""`bayes-attn sweep` (bayes_attn.sweep): grid validation, idempotence, resume after a kill, added axis
values, failed cells, Dask LocalCluster and an external scheduler + worker on the loopback."""

import os
import signal
import socket
import subprocess
import sys
import time

import jax
import numpy as np
import pytest
import xarray as xr
from conftest import RESUME_RUN, driver_problem, subprocess_env

from bayes_attn.cli import main
from bayes_attn.inference import read_run
from bayes_attn.sweep import load_sweep
from bayes_attn.tasks import save_bundle

BASE = f"""
[data]
file = "b.npz"
[network]
width = 5
temperature = 0.1
[model]
kind = "order_parameters"
[sampler]
kind = "nuts"
chains = {RESUME_RUN["chains"]}
warmup = {RESUME_RUN["warmup"]}
draws = 10
checkpoint_every = {RESUME_RUN["checkpoint_every"]}
seed = 0
progress_bar = false
"""


def _setup(tmp_path, sweep: str, base: str = BASE):
    # the data and NUTS settings of the driver's resume test on this model (tests/test_driver.py): the cells'
    # sampler programs are those it compiled (widths, temperature and seed are traced)
    save_bundle(driver_problem()[0], tmp_path / "b.npz")
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(base + "[sweep]\n" + sweep)
    return cfg


def _mtimes(out):
    return {p.name: p.stat().st_mtime_ns for p in sorted((out / "cells").glob("*.nc"))}


@pytest.mark.parametrize(
    "sweep,field",
    [
        ('"network.depth" = [1, 2]\n', "network.depth"),
        ('"width" = [5, 6]\n', "sweep.width"),
        ('"network.width" = 5\n', "sweep.network.width"),
        ('"network.width" = []\n', "sweep.network.width"),
        ('"network.width" = [[5, 6, 7]]\n', "sweep.network.width"),
        ('"network.width" = [5, 0]\n', "network.width"),
        ('"sampler.seed" = [0, -1]\n', "sampler.seed"),
        ('"network.width" = [5, 3]\n', "N_1 >= p_1"),  # the order-parameter model needs N >= n_paths
        ('[sweep.size]\n"network.width" = [5, 8]\n"network.temperature" = [0.1]\n', "sweep.size.network.temperature"),
        ('[sweep.size]\n"network.width" = [5, 5]\n"network.temperature" = [0.1, 0.1]\n', "sweep.size"),
        ('[sweep.size]\n"width" = [5, 8]\n', "sweep.size.width"),
        ('[sweep.size]\n"network.width" = [5, 3]\n"sampler.seed" = [0, 1]\n', "N_1 >= p_1"),
        ('"sampler.seed" = [0, 1]\n[sweep.seed]\n"network.width" = [5, 8]\n', "two axes share a name"),
    ],
)
def test_bad_sweeps_are_one_line_errors_and_touch_nothing(tmp_path, capsys, sweep, field):
    cfg = _setup(tmp_path, sweep)
    out = tmp_path / "out"
    (out / "cells").mkdir(parents=True)
    (out / "cells" / "keep.nc").write_bytes(b"finished earlier")
    assert main(["sweep", str(cfg), "--out", str(out), "--workers", "0", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and field in err and err.count("\n") == 1
    assert (out / "cells" / "keep.nc").read_bytes() == b"finished earlier"
    assert not (out / "sweep.nc").exists()


def test_unreachable_scheduler_and_unwritable_out(tmp_path, capsys, monkeypatch):
    import bayes_attn.sweep._run as sweep_run

    monkeypatch.setattr(sweep_run, "CONNECT_TIMEOUT", "1s")  # the client retries a refused port until then
    cfg = _setup(tmp_path, '"network.width" = [5]\n')
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there
    assert (
        main(
            ["sweep", str(cfg), "--out", str(tmp_path / "o"), "--scheduler", f"tcp://127.0.0.1:{port}", "--no-progress"]
        )
        == 2
    )
    assert "--scheduler: cannot reach" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "file" / "o"), "--workers", "0", "--no-progress"]) == 2
    assert "out: cannot write" in capsys.readouterr().err


def test_grid_names_and_hashes(tmp_path):
    cfg = _setup(tmp_path, '"network.width" = [5, 8]\n"network.temperature" = [0.1, 0.2]\n"sampler.seed" = [0, 1]\n')
    sw = load_sweep(cfg)
    assert sw.names == ("width", "temperature", "seed") and sw.shape == (2, 2, 2)
    names = [c.name for c in sw.cells]
    assert names[0] == "width5_temperature0.1_seed0" and len(set(names)) == 8
    assert len({c.hash for c in sw.cells}) == 8
    again = load_sweep(cfg)
    assert [c.hash for c in again.cells] == [c.hash for c in sw.cells]  # deterministic
    assert sw.cells[-1].raw["network"]["width"] == 8 and sw.cells[-1].raw["sampler"]["seed"] == 1


def test_paired_axes(tmp_path):
    """A table under [sweep] is one axis whose keys go together (a grid at fixed alpha = P / N): its cells, names,
    hashes and the coordinates sweep.nc gives it (each key along the axis)."""
    from bayes_attn.sweep._run import sweep_dataset

    cfg = _setup(
        tmp_path,
        '"sampler.seed" = [0, 1]\n[sweep.size]\n"network.width" = [5, 8, 16]\n"network.temperature" = [0.1, 0.2, 0.1]\n',
    )
    sw = load_sweep(cfg)
    assert sw.names == ("seed", "size") and sw.shape == (2, 3) and sw.paired == (False, True)
    assert sw.values[1] == ("width5_temperature0.1", "width8_temperature0.2", "width16_temperature0.1")
    assert sw.keys == ("sampler.seed", "network.width+network.temperature")
    names = [c.name for c in sw.cells]
    assert names[:3] == ["seed0_width5_temperature0.1", "seed0_width8_temperature0.2", "seed0_width16_temperature0.1"]
    assert len(set(names)) == 6 and len({c.hash for c in sw.cells}) == 6
    last = sw.cells[-1].raw
    assert (last["network"]["width"], last["network"]["temperature"], last["sampler"]["seed"]) == (16, 0.1, 1)
    results = [{"status": "ok", "acc_sampled": 0.5 + 0.01 * k} for k in range(6)]
    ds = sweep_dataset(sw, results)
    assert ds["acc_sampled"].dims == ("seed", "size")
    assert list(ds["width"].values) == [5, 8, 16] and ds["width"].dims == ("size",)
    assert list(ds["temperature"].values) == [0.1, 0.2, 0.1]
    assert float(ds["acc_sampled"].sel(seed=1, size="width8_temperature0.2")) == pytest.approx(0.54)
    # the same cells as the product grid would give them: a cell's hash is its config's, not its axis
    plain = load_sweep(_setup(tmp_path, '"network.width" = [8]\n"network.temperature" = [0.2]\n"sampler.seed" = [1]\n'))
    assert plain.cells[0].hash == sw.cells[4].hash


def test_the_cell_summaries_are_one_list_and_the_workers_import_no_matplotlib():
    """sweep.nc's summary variables (written by the sweep) are the list its readers tabulate; importing the sweep
    (as every worker does) loads no matplotlib (about 1.4 s), which only the readers' figures need."""
    from bayes_attn.diagnostics import CELL_SUMMARY
    from bayes_attn.diagnostics._sweep import TABLE_COLUMNS
    from bayes_attn.sweep import ROW

    assert ROW is CELL_SUMMARY and TABLE_COLUMNS == CELL_SUMMARY + ("status",)
    code = "import sys, bayes_attn.sweep\nprint('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=subprocess_env())
    assert out.stdout.strip() == "False", out.stdout


def test_hash_covers_resolved_defaults_and_version(tmp_path, monkeypatch):
    """A changed default (or package version) is a changed cell: nothing stale is reused."""
    import bayes_attn._version as version_mod

    cfg = _setup(tmp_path, '"network.width" = [5]\n')
    h0 = load_sweep(cfg).cells[0].hash
    monkeypatch.setattr(version_mod, "__version__", "0.0.0-other")
    assert load_sweep(cfg).cells[0].hash != h0
    monkeypatch.undo()
    import bayes_attn.config._sampler as config_mod

    monkeypatch.setattr(
        config_mod.SamplerConfig, "__post_init__", _with_max_tree_depth_default(config_mod.SamplerConfig.__post_init__)
    )
    assert load_sweep(cfg).cells[0].hash != h0


def test_hash_has_precision_not_the_device_layout(tmp_path):
    """Where the chains run changes no draw (docs/design.md, "Chains over devices"); float32 does."""

    def h(name, extra):
        (tmp_path / name).mkdir()
        base = BASE.replace("progress_bar = false", "progress_bar = false\n" + extra)
        return load_sweep(_setup(tmp_path / name, '"network.width" = [5]\n', base)).cells[0].hash

    h0 = h("plain", "")
    assert h("layout", 'chain_method = "parallel"\ndevices = 2') == h0
    assert h("f32", 'precision = "float32"') != h0


def _with_max_tree_depth_default(post_init):
    """``SamplerConfig.__post_init__`` as if the default max_tree_depth were 8."""

    def patched(self):
        post_init(self)
        object.__setattr__(self, "max_tree_depth", 8)

    return patched


def test_sweep_is_idempotent_resumable_and_extensible(tmp_path, monkeypatch):
    """Run, re-run (nothing recomputed), kill a run in the middle (SIGKILL) and finish it, add values."""
    cfg = _setup(tmp_path, '"network.width" = [5, 8]\n"sampler.seed" = [0, 1]\n')
    out = tmp_path / "out"
    # a cell drops this process's compiled programs when its memory maps pass half the limit (which a
    # test worker may reach mid-sweep); off for this run, so the compile-once check below sees the cache
    import bayes_attn.sweep._cell as cell_module

    monkeypatch.setattr(cell_module, "release_compiled_programs", lambda: False)
    # and the first cell starts from no compiled program: an earlier test of this worker may have compiled the
    # same ones (which test runs before this one depends on how the suite is split between workers)
    jax.clear_caches()
    assert main(["sweep", str(cfg), "--out", str(out), "--workers", "0", "--no-progress"]) == 0
    ds = xr.open_dataset(out / "sweep.nc", engine="h5netcdf").load()
    assert ds["acc_sampled"].dims == ("width", "seed") and list(ds["width"].values) == [5, 8]
    for v in (
        "acc_sampled",
        "acc_theory",
        "acc_gp",
        "mean_rel_err",
        "U_rel_err",
        "max_rhat",
        "min_ess_bulk",
        "divergences",
        "converged",
        "wall_s",
        "compile_s",
        "cell",
        "status",
        "error",
    ):
        assert v in ds, v
    # compile once per shape: width and seed are traced, so after the first cell (run first, in this
    # process) the other three compile nothing (JAX's compile events, bayes_attn._cache.CompileTimer)
    comp = ds["compile_s"]
    assert float(comp.sel(width=5, seed=0)) > 0.5
    assert float(comp.max()) == float(comp.sel(width=5, seed=0))
    assert float(comp.sum()) - float(comp.sel(width=5, seed=0)) < 0.05, comp.values
    assert np.all(ds["wall_s"].values > comp.values)
    monkeypatch.undo()
    assert set(ds["status"].values.ravel()) == {"done"} and np.all(np.isfinite(ds["acc_theory"].values))
    # a cell file is an ordinary run file that reopens anywhere, with its theory next to it
    dt = read_run(out / "cells" / "width5_seed0.nc")
    assert dt.attrs["cell_hash"] and dt["posterior"].ds.sizes["draw"] == 10
    assert (out / "cells" / "width5_seed0.theory.nc").is_file()
    before = _mtimes(out)
    assert main(["sweep", str(cfg), "--out", str(out), "--workers", "0", "--no-progress"]) == 0
    assert _mtimes(out) == before  # nothing recomputed or rewritten
    ds2 = xr.open_dataset(out / "sweep.nc", engine="h5netcdf").load()
    assert set(ds2["status"].values.ravel()) == {"reused"}
    np.testing.assert_array_equal(ds2["acc_sampled"].values, ds["acc_sampled"].values)
    # add an axis value: only the new cells are computed
    cfg.write_text(cfg.read_text().replace('"network.width" = [5, 8]', '"network.width" = [5, 8, 11]'))
    assert main(["sweep", str(cfg), "--out", str(out), "--workers", "0", "--no-progress"]) == 0
    ds3 = xr.open_dataset(out / "sweep.nc", engine="h5netcdf").load()
    assert list(ds3["status"].sel(width=11).values) == ["done", "done"]
    assert set(ds3["status"].sel(width=[5, 8]).values.ravel()) == {"reused"}
    assert {k: v for k, v in _mtimes(out).items() if k in before} == before
    # SIGKILL a fresh sweep once its first cell is written, then finish it with the same command
    out2 = tmp_path / "out2"
    env = subprocess_env()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from bayes_attn.cli import main; main()",
            "sweep",
            str(cfg),
            "--out",
            str(out2),
            "--workers",
            "0",
            "--no-progress",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    t0 = time.time()
    while not list((out2 / "cells").glob("*.theory.nc")) and proc.poll() is None and time.time() - t0 < 600:
        time.sleep(0.05)
    while len(list((out2 / "cells").glob("*[0-9].nc"))) < 1 and proc.poll() is None and time.time() - t0 < 600:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the sweep finished before it could be killed"
    done_before = _mtimes(out2)
    assert 1 <= len([k for k in done_before if not k.endswith(".theory.nc")]) < 6
    assert main(["sweep", str(cfg), "--out", str(out2), "--workers", "0", "--no-progress"]) == 0
    ds4 = xr.open_dataset(out2 / "sweep.nc", engine="h5netcdf").load()
    assert set(ds4["status"].values.ravel()) <= {"done", "reused"} and (ds4["status"] == "reused").sum() >= 1
    assert {k: v for k, v in _mtimes(out2).items() if k in done_before} == done_before
    # the same cells give the same draws however the sweep was run
    for name in ("width5_seed0.nc", "width11_seed1.nc"):
        np.testing.assert_array_equal(
            read_run(out / "cells" / name)["posterior"]["f"].values,
            read_run(out2 / "cells" / name)["posterior"]["f"].values,
        )


def test_failed_cell_is_recorded_and_the_others_finish(tmp_path, capsys):
    """An ill-posed cell (one path, rank K = N0 < P and T -> 0 on the P x P route, ``path_space = "dense"``: the
    saddle point that init = "theory" needs does not converge; in path space it would, docs/theory.md §4.10) fails
    with its error line; the other cell is computed; exit code 1 names the failed cell and nothing else."""
    from bayes_attn.network import HeadLayer
    from bayes_attn.tasks import Task

    rng = np.random.default_rng(0)
    P, n0 = 15, 6
    task = Task(
        rng.standard_normal((P, 1, n0)),
        np.sign(rng.standard_normal(P)),
        rng.standard_normal((4, 1, n0)),
        np.ones(4),
        (HeadLayer.w(rng.standard_normal((1, n0, n0))),),
    )
    base = BASE.replace("seed = 0\n", 'seed = 0\ninit = "theory"\n').replace(
        'kind = "order_parameters"\n', 'kind = "order_parameters"\npath_space = "dense"\n'
    )
    cfg = _setup(tmp_path, '"network.temperature" = [0.1, 1e-13]\n', base)
    save_bundle(task, tmp_path / "b.npz")
    out = tmp_path / "out"
    assert main(["sweep", str(cfg), "--out", str(out), "--workers", "0", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "failed: width5" not in err and "temperature1e-13" in err
    ds = xr.open_dataset(out / "sweep.nc", engine="h5netcdf").load()
    assert ds["status"].sel(temperature=0.1).item() == "done"
    assert ds["status"].sel(temperature=1e-13).item() == "failed"
    assert "saddle point did not converge" in ds["error"].sel(temperature=1e-13).item()


@pytest.mark.slow(seconds=70)  # two spawned workers compile; the loopback test below covers Dask in the fast suite
def test_local_cluster_two_workers(tmp_path):
    """The embedded Dask LocalCluster (2 spawned worker processes, one XLA thread each)."""
    cfg = _setup(tmp_path, '"network.width" = [5, 8]\n')
    out = tmp_path / "out"
    assert main(["sweep", str(cfg), "--out", str(out), "--workers", "2", "--no-progress"]) == 0
    ds = xr.open_dataset(out / "sweep.nc", engine="h5netcdf").load()
    assert list(ds["status"].values) == ["done", "done"]
    ref = tmp_path / "ref"
    assert main(["sweep", str(cfg), "--out", str(ref), "--workers", "0", "--no-progress"]) == 0
    np.testing.assert_allclose(
        read_run(out / "cells" / "width8.nc")["posterior"]["U"].values,
        read_run(ref / "cells" / "width8.nc")["posterior"]["U"].values,
        rtol=1e-10,
    )


def _thread_affinities():
    from threadpoolctl import threadpool_info

    out = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            out.add(frozenset(os.sched_getaffinity(int(tid))))
        except OSError:
            pass
    return os.getpid(), out, {i["filepath"]: i["num_threads"] for i in threadpool_info()}


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this OS")
def test_local_cluster_workers_are_pinned_one_core_each():
    """Every thread of LocalCluster worker i runs on the i-th allowed core (modulo their number): the
    measured cure for two JAX workers on two cores running 30-90x slower than one."""
    from bayes_attn.sweep._run import open_client

    mine = os.sched_getaffinity(0)
    try:  # widened: a pytest-xdist worker is itself pinned to one core
        os.sched_setaffinity(0, range(os.cpu_count()))
    except OSError:  # a cpuset smaller than the machine: keep what we have
        pass
    allowed = sorted(os.sched_getaffinity(0))
    try:
        client, cluster = open_client(3, None)
    finally:
        os.sched_setaffinity(0, mine)
    try:
        info = client.run(_thread_affinities)
        names = {addr: ws.name for addr, ws in client.cluster.scheduler.workers.items()}
    finally:
        client.close()
        cluster.close()
    assert len(info) == 3
    for addr, (pid, affinities, pools) in info.items():
        assert pid != os.getpid()
        want = frozenset({allowed[int(names[addr]) % len(allowed)]})
        assert affinities == {want}, (names[addr], affinities)
        assert pools and all(n == 1 for n in pools.values()), pools  # one BLAS thread on one core
    assert len({next(iter(aff)) for _, aff, _ in info.values()}) == min(3, len(allowed))  # distinct cores


def test_external_scheduler_and_worker_on_loopback(tmp_path):
    """The cluster recipe of the README, on 127.0.0.1: `dask scheduler`, one `taskset -c CORE dask worker`,
    then `bayes-attn sweep --scheduler tcp://127.0.0.1:PORT`."""
    cfg = _setup(tmp_path, '"sampler.seed" = [0, 1]\n')
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = subprocess_env()
    bindir = os.path.dirname(sys.executable)
    sched = subprocess.Popen(
        [os.path.join(bindir, "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    core = sorted(os.sched_getaffinity(0))[-1]  # the README pins each worker with taskset
    worker = subprocess.Popen(
        [
            "taskset",
            "-c",
            str(core),
            os.path.join(bindir, "dask"),
            "worker",
            f"tcp://127.0.0.1:{port}",
            "--nthreads",
            "1",
            "--no-dashboard",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        out = tmp_path / "out"
        assert (
            main(["sweep", str(cfg), "--out", str(out), "--scheduler", f"tcp://127.0.0.1:{port}", "--no-progress"]) == 0
        )
        ds = xr.open_dataset(out / "sweep.nc", engine="h5netcdf").load()
        assert list(ds["status"].values) == ["done", "done"]
    finally:
        for p in (worker, sched):
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.mark.slow
def test_a_sweep_of_sampled_attention_cells(tmp_path):
    """Sampled attention (docs/attention.md) runs as sweep cells: a [model] basis file is read relative to the
    config and hashed with the cell, the cells carry their attention maps, and a changed basis is a changed cell."""
    base = BASE.replace('kind = "order_parameters"', 'kind = "attention"\nrank = 1\nbasis = "B.npy"\nlimit = "gp"')
    cfg = _setup(tmp_path, '"network.temperature" = [0.1, 1.0]\n', base)
    np.save(tmp_path / "B.npy", np.eye(3)[:, :2])
    out = tmp_path / "out"
    assert main(["sweep", str(cfg), "--out", str(out), "--workers", "0", "--no-progress"]) == 0
    ds = xr.open_dataset(out / "sweep.nc", engine="h5netcdf").load()
    assert list(ds["status"].values) == ["done", "done"]
    cells = load_sweep(cfg).cells
    dt = read_run(out / "cells" / f"{cells[0].name}.nc")
    assert dt.attrs["model"] == "attention" and dt.attrs["attention_dimension"] == 2
    assert "attention_1" in dt["posterior"].ds and dt.attrs["cell_hash"] == cells[0].hash
    np.save(tmp_path / "B.npy", np.eye(3)[:, 1:])  # same path, other content: other cells
    assert all(c.hash != old.hash for c, old in zip(load_sweep(cfg).cells, cells))
