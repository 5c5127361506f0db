"""Benchmark scripts run (tiny sizes): the device benchmark's --smoke mode on the CPU, the sweep
benchmark's --smoke mode (one cell; it starts about a dozen processes) and the Wishart-sites benchmark (slow); the
pinning benchmark's --smoke mode (fast)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import smoke_env

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow(seconds=60)  # compilation of six GPU-sized programs at CPU-smoke sizes
def test_device_benchmark_smoke(tmp_path):
    out = tmp_path / "device.json"
    env = smoke_env(PYTHON=sys.executable)
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "device" / "run.sh"), "--smoke", "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    cases = {c["case"]: c for c in res["cases"]}
    assert set(cases) == {"nuts_full", "wishart_1e5", "gibbs_64", "digits_theory", "nuts_full_f32", "wishart_1e5_f32"}
    assert res["meta"]["smoke"] and res["meta"]["backend"] == "cpu"
    assert cases["wishart_1e5"]["width"][0] == 100_000 and cases["wishart_1e5"]["model"] == "order_parameters"
    assert all(c["wall_s"] > 0 and c["min_ess_bulk"] > 0 for k, c in cases.items() if k != "digits_theory")
    assert cases["digits_theory"]["paths"] == 16 and all(cases["digits_theory"]["converged"])
    # the sharded path: the script asks for 4 host devices, so 2 chains run on 2 of them
    assert all(c["devices"] == 2 for k, c in cases.items() if k != "digits_theory")
    assert cases["wishart_1e5_f32"]["precision"] == "float32" and cases["wishart_1e5"]["precision"] == "float64"


@pytest.mark.slow(seconds=60)  # its ways share one compilation cache
def test_sweep_benchmark_smoke(tmp_path):
    out = tmp_path / "sweep.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "sweep" / "run.py"),
            "--smoke",
            "--grid",
            str(ROOT / "benchmarks" / "sweep" / "grid_full.toml"),
            "--out",
            str(out),
        ],
        env=smoke_env(),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert set(res["median_wall_s"]) == {"processes", "processes_warm_cache", "sweep_1", "sweep_2"}
    assert res["meta"]["grid_file"] == "grid_full.toml" and set(res["meta"]["runs_per_way"].values()) == {1}
    assert "warmup = 10" in res["meta"]["grid"] and "draws = 10" in res["meta"]["grid"]  # the smoke sizes
    assert res["theory"]["theory_cold_s"] > 0 and "split_warm" in res["theory"]


@pytest.mark.slow
def test_wishart_sites_benchmark_smoke(tmp_path):
    """benchmarks/wishart_sites/run.py at tiny sizes: both coordinates run and the JSON has what the table reads."""
    out = tmp_path / "sites.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "wishart_sites" / "run.py"),
            "--draws",
            "100",
            "--warmup",
            "100",
            "--out",
            str(out),
        ],
        env=smoke_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert [c["sites"] for c in res["cases"]] == ["centred", "noncentred"]
    assert all(c["median_steps"] >= 1 and len(c["step_size"]) == 4 for c in res["cases"])


def test_pinning_benchmark_smoke(tmp_path):
    """The pinning benchmark runs (20 calls per process) and fills every row; the speed claims it backs are
    read from benchmarks/sweep/pinning.json by docs/design.md, never asserted here."""
    out = tmp_path / "pinning.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sweep" / "pinning.py"), "--smoke", "--out", str(out)],
        env=smoke_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    cores = res["meta"]["cores"]
    assert {(r["flags"], r["pinned"], r["processes"]) for r in res["rows"]} == {
        (f, p, n) for f in ("none", "eigen_off", "eigen_off_intra_op_token") for p in (False, True) for n in {1, cores}
    }
    assert all(r["loop_s_median"] > 0 for r in res["rows"])


def test_blas_pinned_benchmark_smoke(tmp_path):
    """benchmarks/sweep/blas_pinned.py runs its three probes and records the BLAS threads each had: 1 only with
    the limit (docs/design.md reads the times from benchmarks/sweep/blas_pinned.json)."""
    out = tmp_path / "blas.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sweep" / "blas_pinned.py"), "--smoke", "--out", str(out)],
        env=smoke_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["mode"]: r for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"unpinned", "pinned_no_limit", "pinned_one_thread"}
    assert rows["pinned_one_thread"]["blas_threads"] == 1
    assert rows["pinned_no_limit"]["blas_threads"] == rows["unpinned"]["blas_threads"]
    assert all(r["matmul_s_median"] > 0 and r["cholesky_s_median"] > 0 for r in rows.values())


@pytest.mark.slow(seconds=50)
def test_profile_benchmark_smoke(tmp_path):
    """benchmarks/profile/run.py at tiny sizes on a gradient sampler and Gibbs: the phases add up, the warm process
    compiles less than the cold one (its cache is hit), and the floor is its parts."""
    out = tmp_path / "profile.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "profile" / "run.py"),
            "--smoke",
            "--cases",
            "nuts-order_parameters",
            "gibbs-weights",
            "--out",
            str(out),
        ],
        env=smoke_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["smoke"] and [c["case"] for c in res["cases"]] == ["nuts-order_parameters", "gibbs-weights"]
    for c in res["cases"]:
        cold, warm = c["cold"], c["warm"]
        assert cold["cache_bytes"] > 0 and warm["compile_s"] < cold["compile_s"]
        for r in (cold, warm):
            parts = (
                r["import_s"]
                + r["data_s"]
                + r["model_output_s"]
                + r["write_s"]
                + sum(r[f"{p}_s"] for p in ("init", "warmup", "end", "sample"))
            )
            assert parts == pytest.approx(r["total_s"], rel=1e-6)
            assert sum(r[f"compile_{p}_s"] for p in ("init", "warmup", "end", "sample")) <= r["compile_s"] + 1e-9
        assert warm["floor_s"] == pytest.approx(warm["unit_s"] * warm["units"] + warm["derived_s"] * warm["kept"])
        assert warm["kept"] == 10 and warm["lockstep_units"] >= warm["units"] > 0
    assert res["cases"][1]["warm"]["units"] == 20  # Gibbs: one sweep per iteration, warm-up included


@pytest.mark.slow
def test_profile_cold_warm_smoke(tmp_path):
    """benchmarks/profile/run.py --cold-warm at tiny sizes: one pair per repeat, each cold process with a cache of its
    own (so it compiles more than its warm partner every time), at N = 30, and the difference is of the totals."""
    out = tmp_path / "cold_warm.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "profile" / "run.py"), "--cold-warm", "--smoke", "--repeats", "2"]
    proc = subprocess.run(
        cmd + ["--cases", "gibbs-weights", "--out", str(out)],
        env=smoke_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (case,) = json.loads(out.read_text())["cases"]
    assert case["case"] == "gibbs-weights" and case["width"] == 30 and [r["repeat"] for r in case["repeats"]] == [0, 1]
    for r in case["repeats"]:
        cold, warm = r["cold"], r["warm"]
        assert cold["width"] == warm["width"] == [30, 30, 30] and "floor_s" not in warm
        assert r["cold_minus_warm_s"] == pytest.approx(cold["total_s"] - warm["total_s"])
        assert r["warm_compile_s"] < r["cold_compile_s"]


def test_attention_budget_sizes_the_iterations_from_timed_pilots():
    """benchmarks/attention/run.py --budget-s: two pilots give the seconds per iteration and the compilation; the
    case gets the iterations that fill what is left, in the warm-up share asked for."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("attention_run", ROOT / "benchmarks" / "attention" / "run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    clock = {"t": 0.0}
    calls = []

    def run(w, d):  # a fake case: 5 s to compile a new warm-up length, then 0.01 s per iteration
        clock["t"] += (5.0 if w not in [c[0] for c in calls] else 0.0) + 0.01 * (w + d)
        calls.append((w, d))

    warmup, draws, pilot = mod.budgeted_iterations(run, 100.0, 0.25, safety=1.0, clock=lambda: clock["t"])
    n = mod.PILOT_ITERATIONS
    assert calls == [(n, n), (n, n)]
    assert pilot["seconds_per_iteration"] == pytest.approx(0.01) and pilot["compile_s"] == pytest.approx(5.0)
    # 100 s - the pilots (5 + 0.4 + 0.4 s) - the case's compilation (5 s) = 89.2 s = 8920 iterations
    assert abs(warmup + draws - 8920) <= 1 and warmup == round(0.25 * (warmup + draws))
    run(warmup, draws)
    assert clock["t"] == pytest.approx(100.0, abs=0.02)


@pytest.mark.slow
@pytest.mark.parametrize("sampler", [[], ["--sampler", "tempering", "--replicas", "3"]], ids=["nuts", "tempering"])
def test_attention_benchmark_smoke(tmp_path, sampler):
    """benchmarks/attention/run.py at tiny sizes: one GP-limit case, its JSON rows and the hand-built reference."""
    out = tmp_path / "attention.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "attention" / "run.py"), "--smoke", "--limits", "gp", *sampler]
    proc = subprocess.run(
        cmd + ["--bases", "pos_pc2", "--out", str(out)], env=smoke_env(), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    (case,) = res["cases"]
    assert case["limit"] == "gp" and case["basis"] == "pos_pc2" and 0 <= case["accuracy"] <= 1
    assert case["sampler"] == (sampler[1] if sampler else "nuts")
    if sampler:
        assert case["replicas"] == 3 and 0 < case["mean_swap_rate"] <= 1
        assert len(case["pair_swap_rate"]) == 2 and all(0 <= r <= 1 for r in case["pair_swap_rate"])
        assert len(case["round_trips_per_chain"]) == 4 and all(n >= 0 for n in case["round_trips_per_chain"])
        assert len(case["ladder"]) == 3 and case["ladder"][0] == 1.0 and case["ladder"][-1] == pytest.approx(0.01)
    assert len(case["accuracy_per_chain"]) == 4 and case["gradients"] > 0 and case["attention_scale"] > 0
    assert len(case["lp_per_chain"]) == 4 and all(np.isfinite(case["lp_per_chain"]))
    assert [h["limit"] for h in res["hand_built"]] == ["gp"] and 0.5 <= res["hand_built"][0]["accuracy"] <= 1
    (prior,) = res["prior_draws"]  # the predictor at 4 prior draws of the attention ("random heads")
    assert prior["limit"] == "gp" and len(prior["accuracy"]) == 4 and all(0 <= a <= 1 for a in prior["accuracy"])
    with np.load(tmp_path / case["maps_file"]) as maps:  # posterior mean attention of the first test inputs
        a1, a2 = maps["attention_1"], maps["attention_2"]
        assert 1 <= a1.shape[0] == a2.shape[0] <= 8 and a1.shape[-2:] == a2.shape[-2:]
        np.testing.assert_allclose(a1.sum(axis=-2), 1.0, rtol=1e-9)  # a mean of maps normalised over keys


@pytest.mark.slow
def test_attention_benchmark_digits_smoke(tmp_path):
    """benchmarks/attention/run.py --task digits at tiny sizes: the case is the digits task's (16 paths, mean readout,
    T = 0.25) and the reference is the theory at the task's random heads; the Markov basis is refused."""
    out = tmp_path / "digits.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "attention" / "run.py"), "--smoke", "--task", "digits"]
    proc = subprocess.run(
        cmd + ["--limits", "gp", "--bases", "none", "--rank", "2", "--out", str(out)],
        env=smoke_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    (case,) = res["cases"]
    assert res["task"] == "digits" and case["task"].startswith("digits") and case["temperature"] == 0.25
    assert case["basis"] == "none" and case["rank"] == 2 and 0 <= case["accuracy"] <= 1
    (ref,) = res["hand_built"]
    assert ref["heads"] == "random (GD initialisation)" and 0 <= ref["accuracy"] <= 1
    with np.load(tmp_path / case["maps_file"]) as maps:  # two layers of four heads over the 12 tokens
        assert maps["attention_1"].shape[1:] == (4, 12, 12) and maps["attention_2"].shape[1] == 4
    bad = subprocess.run(
        cmd + ["--bases", "pos_pc2", "--out", str(out)], env=smoke_env(), capture_output=True, text=True, timeout=600
    )
    assert bad.returncode == 2 and "--bases" in bad.stderr.splitlines()[-1]


@pytest.mark.slow
def test_gd_markov_benchmark_smoke(tmp_path):
    """benchmarks/attention/gd_markov.py at tiny sizes: the GD network's accuracy and the theory at its attention."""
    out = tmp_path / "gd.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "attention" / "gd_markov.py"), "--smoke", "--out", str(out)]
    proc = subprocess.run(cmd, env=smoke_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = json.loads(out.read_text())["runs"]
    assert run["P"] == 40 and run["config"]["heads"] == [2, 2] and 1 <= run["best_step"] <= 40
    for k in ("test_accuracy", "train_accuracy", "best_val_accuracy", "theory_at_gd_attention", "gp_at_gd_attention"):
        assert 0 <= run[k] <= 1


@pytest.mark.slow
def test_startup_benchmark_smoke(tmp_path):
    """benchmarks/startup/run.py on a tiny theory config: cold and warm runs of both variants, medians of them."""
    config = tmp_path / "tiny.toml"
    config.write_text(
        '[data]\ntask = "markov"\nP = 20\nn_test = 30\npaths = 4\n\n[network]\nwidth = [10, 100]\ntemperature = 0.1\n'
    )
    out = tmp_path / "startup.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "startup" / "run.py"), "--runs", "1", "--config", str(config)]
    proc = subprocess.run(cmd + ["--out", str(out)], env=smoke_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert set(res["times_s"]) == {"disk", "trace"} == set(res["variants"])
    for v in ("disk", "trace"):
        assert len(res["times_s"][v]["cold"]) == len(res["times_s"][v]["warm"]) == 1
        assert res["median_s"][v]["cold"] == res["times_s"][v]["cold"][0] > 0


def test_suite_profile_bins_compile_events_by_kind():
    """The suite profiler's plugin counts XLA compilations by how long one took (bins of ``BINS``), sums tracing and
    lowering apart, and ignores other events."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "suite"))
    try:
        from _profile_plugin import BINS, _Counts
    finally:
        sys.path.pop(0)
    from bayes_attn._cache import COMPILE_EVENTS

    c = _Counts(COMPILE_EVENTS)
    for i, d in enumerate((0.01, 0.049, 0.05, 0.3, 2.5, 7.0)):
        c.listen(c.backend, d, fun_name=f"jit(f{i})")
    c.listen(COMPILE_EVENTS[0], 0.4)
    c.listen(COMPILE_EVENTS[1], 0.1)
    c.listen("/jax/other", 9.0)
    assert BINS == (0.05, 0.2, 1.0, float("inf"))
    assert c.backend_n == [2, 1, 1, 2]
    np.testing.assert_allclose(c.backend_s, [0.059, 0.05, 0.3, 9.5])
    assert c.trace_s == pytest.approx(0.5)
    assert c.large == [["jit(f4)", 2.5], ["jit(f5)", 7.0]]  # the programs of the last bin, by name


def test_suite_profile_smoke(tmp_path):
    """``benchmarks/suite/run.py`` on two tests of one file, in one process: a row per test, its compilations
    counted (the tests jit small programs), and the file's and the session's sums equal the tests'."""
    out = tmp_path / "suite.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "suite" / "run.py"), "-n", "0", "--out", str(out)]
    cmd += ["--rows", str(tmp_path / "rows.jsonl")]
    cmd += [
        f"tests/test_linalg.py::{t}"
        for t in ("test_log_marginal_and_energy_equal_dense_formulas", "test_cholesky_theta_inverts_factor")
    ]
    env = smoke_env(BAYES_ATTN_CACHE_DIR="off")  # compile here: no program from the session's cache
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    t = res["total"]
    assert t["tests"] == 2 and res["returncode"] == 0 and list(res["files"]) == ["tests/test_linalg.py"]
    assert t["backend_compiles"] > 0 and t["backend_compile_s"] > 0
    assert sum(t["backend_compiles_by_bin"]) == t["backend_compiles"]
    assert res["files"]["tests/test_linalg.py"] == t and len(res["slowest"]) == 2
    assert t["wall_s"] <= res["session_wall_s"]
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert sorted(r["id"].split("::")[1] for r in rows) == sorted(r["id"].split("::")[1] for r in res["slowest"])
    assert (
        sum(len(r["large"]) for r in rows)
        == t["backend_compiles_by_bin"][-1]
        == sum(p["programs"] for p in res["large_programs"])
    )
    np.testing.assert_allclose(
        t["rest_s"], t["wall_s"] - t["backend_compile_s"] - t["trace_lower_s"] - t["children_cpu_s"]
    )


@pytest.mark.slow(seconds=40)
def test_scale_benchmark_smoke(tmp_path):
    """benchmarks/scale/run.py at P = 100 and 1000: both routes run, agree to 1e-9 and the JSON has what the table
    and the figure read (docs/benchmarks.md)."""
    out = tmp_path / "scale.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scale" / "run.py"), "--smoke", "--out", str(out)],
        env=smoke_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert [r["P"] for r in res["rows"]] == [100, 1000]
    for r in res["rows"]:
        assert set(r["routes"]) == {"dense", "path"}
        assert r["routes"]["path"]["solve_ok"], (r["P"], r["routes"]["path"]["solve_status"])
        assert max(r["rel_diff_value"], r["rel_diff_grad"]) < 1e-9
        # at XLA's level 0 on one BLAS thread the P x P solve at P = 1000 stops at its iteration limit short of the
        # 1e-9 gradient (rounding; path space converges): U is compared where both converged
        if r["routes"]["dense"]["solve_ok"]:
            assert r["rel_diff_U"] < 1e-8
    fig = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "scale" / "figure.py"),
            "--json",
            str(out),
            "--out",
            str(tmp_path / "scale.png"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert fig.returncode == 0 and (tmp_path / "scale.png").stat().st_size > 0, fig.stderr[-2000:]


@pytest.mark.slow(seconds=60)
def test_potts_scale_benchmark_smoke(tmp_path, monkeypatch):
    """benchmarks/potts_scale/run.py on the rhomboid family tiled twice, two iterations: the tiled alignment
    has twice the columns, the fit's record carries what the table reads, and the table renders from it."""
    out = tmp_path / "r.json"
    cmd = [
        sys.executable,
        str(ROOT / "benchmarks" / "potts_scale" / "run.py"),
        "--family",
        "rhomboid",
        "--tiles",
        "2",
        "--models",
        "plmdca",
        "--max-iter",
        "2",
        "--work",
        str(tmp_path / "w"),
        "--results",
        str(out),
    ]
    proc = subprocess.run(cmd, env=smoke_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (row,) = json.loads(out.read_text())["rows"].values()
    assert row["L"] == 2 * 135 and row["bounded"] and row["fit"]["iterations"] == 2
    assert row["site_block"] > 0 and row["peak_rss_mb"] * 1e6 <= 1.5 * row["memory_estimate_mb"] * 1e6
    monkeypatch.syspath_prepend(str(ROOT / "scripts" / "tables"))
    import potts_scale

    monkeypatch.setattr(potts_scale, "load", lambda rel, writer: json.loads(out.read_text()))
    text = potts_scale.render()
    assert "rhomboid × 2" in text and "bounded at 2" in text


@pytest.mark.slow(seconds=60)
def test_scale_sample_benchmark_smoke(tmp_path):
    """benchmarks/scale/sample.py on a tiny config: it runs `bayes-attn sample` and `theory` as processes, and the
    JSON has what docs/benchmarks.md's table reads, consistent with itself (sampling inside the command's wall
    time, three leapfrog steps at most per draw at tree depth 2, the gap the difference of the accuracies)."""
    cfg = tmp_path / "tiny.toml"
    text = (ROOT / "benchmarks" / "scale" / "sample_p1e4.toml").read_text()
    text = text.replace("P = 10000", "P = 30").replace("n_test = 1000", "n_test = 20")
    text = text.replace("width = 10000", "width = 30")
    cfg.write_text(
        text.replace('kind = "nuts"', 'kind = "nuts"\nchains = 2\nwarmup = 20\ndraws = 20\nprogress_bar = false')
    )
    out = tmp_path / "sample.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scale" / "sample.py"), "--config", str(cfg), "--work",
         str(tmp_path / "work"), "--out", str(out)],
        env=smoke_env(), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    r, c = res["run"], res["commands"]
    assert (res["P"], res["N"], res["n_test"], res["max_tree_depth"]) == (30, 30, 20, 2)
    assert 0 < r["sampling_s"] < c["sample"]["wall_s"] and c["theory"]["wall_s"] > 0
    assert c["sample"]["peak_rss_gb"] > 0.1 and c["theory"]["peak_rss_gb"] > 0.1
    assert (r["chains"], r["draws"], r["warmup"]) == (2, 20, 20)
    assert 1 <= r["steps_per_draw"] <= 3 and r["gradients"]["sample_stats"] <= 3 * 2 * 20
    assert r["acc_gap_pts"] == pytest.approx(100 * (r["acc_sampled"] - r["acc_theory"]))
    assert 0 <= r["acc_theory"] <= 1 and r["theory_ok"]
