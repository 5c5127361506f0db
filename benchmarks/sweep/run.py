"""Sweep benchmark: the same grid of cells run three ways, whole-process wall time, side by side.

* ``processes``: every cell as separate ``bayes-attn sample`` and ``bayes-attn theory`` processes, one after the
  other (what users did before ``bayes-attn sweep``), with the persistent compilation cache **off** (the
  situation before this issue) and, as ``processes_warm_cache``, **on** and warm;
* ``sweep_1``: ``bayes-attn sweep --workers 1`` (one worker compiles each program once);
* ``sweep_2``: ``bayes-attn sweep --workers 2``.

Sweeps run with the persistent cache off too, so that they measure compile-once-per-worker, not the disk
cache (except ``--smoke``, which checks that every way runs, not its times: its ways share one cache).  Repeats
are interleaved (processes, sweep_1, sweep_2, processes, ...) and each run starts from an
empty output folder; medians of ``--repeats`` runs.  Also ``bayes-attn theory`` on 3 widths end to end with a
cold and a warm cache, split into import / data / first solve (compile + solve) / second solve.

    .venv/bin/python benchmarks/sweep/run.py --out benchmarks/sweep/results.json      # ~25 min on 2 idle cores
    .venv/bin/python benchmarks/sweep/run.py --smoke --out /tmp/sweep_bench.json     # seconds (tests)
    .venv/bin/python benchmarks/sweep/run.py --ways sweep_1 sweep_2 --repeats 3 \
        --out benchmarks/sweep/results_workers.json                                    # workers only, ~20 min
    .venv/bin/python benchmarks/sweep/run.py --grid benchmarks/sweep/grid_full.toml --ways processes sweep_1 \
        sweep_2 --repeats 3 --process-repeats 1 --out benchmarks/sweep/results_full.json   # issue's size, ~1 h

``--process-repeats K``: the ``processes`` ways run in the first K repeats only (they are the slowest, and
the ratio they back is far from its target); the sweeps run in every repeat.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent


def _run(cmd, env, cwd) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _cell_configs(grid: Path, work: Path) -> list[Path]:
    """One plain run config per cell of the grid (the [sweep] table expanded)."""
    from bayes_attn.sweep import load_sweep, to_toml

    out = []
    for c in load_sweep(grid).cells:
        p = work / f"{c.name}.toml"
        p.write_text(to_toml(c.raw))
        out.append(p)
    return out


def processes(grid: Path, work: Path, env) -> float:
    cells = _cell_configs(grid, work)
    t0 = time.perf_counter()
    for cfg in cells:
        _run(
            [
                str(BIN / "bayes-attn"),
                "sample",
                str(cfg),
                "--out",
                str(work / (cfg.stem + ".nc")),
                "--quiet",
                "--no-progress",
            ],
            env,
            work,
        )
        _run(
            [
                str(BIN / "bayes-attn"),
                "theory",
                str(cfg),
                "--out",
                str(work / (cfg.stem + ".theory.nc")),
                "--no-progress",
            ],
            env,
            work,
        )
    return time.perf_counter() - t0


def sweep(grid: Path, work: Path, env, workers: int) -> float:
    return _run(
        [
            str(BIN / "bayes-attn"),
            "sweep",
            str(grid),
            "--out",
            str(work / "out"),
            "--workers",
            str(workers),
            "--no-progress",
        ],
        env,
        work,
    )


THEORY_PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
from bayes_attn.inference import load_config
from bayes_attn._cache import enable_compilation_cache
from bayes_attn.theory import solve
enable_compilation_cache()
t1 = time.perf_counter()
cfg = load_config(sys.argv[1]); task = cfg.task(); spec = cfg.base_spec(task); phi = task.phi("train", spec)
phi.block_until_ready()
t2 = time.perf_counter()
solve(spec.with_(width=cfg.widths[0]), phi, task.y_train)
t3 = time.perf_counter()
for w in cfg.widths[1:]:
    solve(spec.with_(width=w), phi, task.y_train)
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "data_s": t2 - t1, "first_solve_s": t3 - t2,
                  "other_solves_s": (t4 - t3) / max(len(cfg.widths) - 1, 1)}))
"""


def theory_cold_warm(cfg: Path, work: Path, base_env) -> dict:
    cache = work / "jax-cache"
    env = {**base_env, "BAYES_ATTN_CACHE_DIR": str(cache)}
    out = {}
    for label in ("cold", "warm"):
        if label == "cold":
            shutil.rmtree(cache, ignore_errors=True)
        out[f"theory_{label}_s"] = _run(
            [str(BIN / "bayes-attn"), "theory", str(cfg), "--out", str(work / "t.nc"), "--no-progress"], env, work
        )
    for label in ("cold", "warm"):
        if label == "cold":
            shutil.rmtree(cache, ignore_errors=True)
        res = subprocess.run(
            [sys.executable, "-c", THEORY_PROBE, str(cfg)],
            env=env,
            cwd=work,
            check=True,
            capture_output=True,
            text=True,
        )
        out[f"split_{label}"] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


WAYS = ("processes", "processes_warm_cache", "sweep_1", "sweep_2")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "results.json"))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--smoke", action="store_true", help="a 1-cell grid with 2 x (10 + 10) iterations")
    ap.add_argument("--grid", default=str(HERE / "grid.toml"), help="the sweep config (default grid.toml)")
    ap.add_argument(
        "--process-repeats",
        type=int,
        default=None,
        help="run the processes ways in the first K repeats only (default: every repeat)",
    )
    ap.add_argument(
        "--ways",
        nargs="+",
        choices=WAYS,
        default=list(WAYS),
        help="run only these ways (and skip the theory probe unless all run)",
    )
    args = ap.parse_args(argv)
    if set(args.ways) != set(WAYS) and Path(args.out).resolve() == (HERE / "results.json").resolve():
        ap.error("a run of some --ways only must not overwrite results.json: give --out (e.g. results_workers.json)")
    grid_text = Path(args.grid).read_text()
    if args.smoke:
        grid_text = re.sub(r"(?m)^draws = \d+", "draws = 10", re.sub(r"(?m)^warmup = \d+", "warmup = 10", grid_text))
        grid_text = (
            grid_text.replace("chains = 4", "chains = 2")
            .replace("n_test = 1000", "n_test = 20")
            .replace("P = 100", "P = 10")
            .replace('"network.width" = [10, 30, 100, 1000]', '"network.width" = [10]')
            .replace('"network.temperature" = [0.01, 0.1]', '"network.temperature" = [0.1]')
        )
        args.repeats = 1
    # a smoke run checks that every way runs, not its times: it keeps the caller's optimisation level, and its ways
    # share one cache (each program compiled once)
    flags = "--xla_cpu_multi_thread_eigen=false"
    if args.smoke:
        flags += "".join(f" {f}" for f in os.environ.get("XLA_FLAGS", "").split() if "optimization_level" in f)
    base_env = {**os.environ, "XLA_FLAGS": flags}
    n_cells = len(tomllib.loads(grid_text)["sweep"]["network.width"]) * len(
        tomllib.loads(grid_text)["sweep"]["network.temperature"]
    )
    times = {k: [] for k in args.ways}
    everything = set(args.ways) == set(WAYS)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        grid = tmp / "grid.toml"
        grid.write_text(grid_text)
        warm = {**base_env, "BAYES_ATTN_CACHE_DIR": str(tmp / "warm-cache")}
        cold_env = warm if args.smoke else {**base_env, "BAYES_ATTN_CACHE_DIR": "off"}
        if "processes_warm_cache" in times:
            processes(grid, _fresh(tmp / "prime"), warm)  # fills the warm cache once (not timed)
        run = {
            "processes": lambda w: processes(grid, w, cold_env),
            "processes_warm_cache": lambda w: processes(grid, w, warm),
            "sweep_1": lambda w: sweep(grid, w, cold_env, 1),
            "sweep_2": lambda w: sweep(grid, w, cold_env, 2),
        }
        for r in range(args.repeats):
            for k in times:  # interleaved: every way once per repeat
                if k.startswith("processes") and args.process_repeats is not None and r >= args.process_repeats:
                    continue
                times[k].append(run[k](_fresh(tmp / f"{k}{r}")))
            print(json.dumps({k: v[-1] for k, v in times.items() if len(v) == r + 1}), flush=True)
        theory = None
        if everything:
            theory_cfg = tmp / "theory.toml"
            raw = tomllib.loads(grid_text)
            raw.pop("sweep")
            raw["network"]["width"] = [10, 100, 1000]
            from bayes_attn.sweep import to_toml

            theory_cfg.write_text(to_toml(raw))
            theory = theory_cold_warm(theory_cfg, _fresh(tmp / "theory"), base_env)
    med = {k: statistics.median(v) for k, v in times.items()}
    res = {
        "meta": {
            "grid": grid_text,
            "grid_file": Path(args.grid).name,
            "cells": n_cells,
            "repeats": args.repeats,
            "runs_per_way": {k: len(v) for k, v in times.items()},
            "smoke": args.smoke,
            "ways": list(times),
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "load_avg_start": os.getloadavg()[0],
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        },
        "wall_s": times,
        "median_wall_s": med,
    }
    for name, (a, b) in {
        "ratio_processes_over_sweep_1": ("processes", "sweep_1"),
        "ratio_sweep_1_over_sweep_2": ("sweep_1", "sweep_2"),
        "ratio_processes_warm_over_sweep_1": ("processes_warm_cache", "sweep_1"),
    }.items():
        if a in med and b in med:
            res[name] = med[a] / med[b]
    if theory is not None:
        res["theory"] = {**theory, "ratio_cold_over_warm": theory["theory_cold_s"] / theory["theory_warm_s"]}
    from bayes_attn._io import atomic_write_json

    out = atomic_write_json(args.out, res, field="--out")
    print(json.dumps({k: v for k, v in res.items() if k == "median_wall_s" or k.startswith("ratio")}, indent=1))
    print(f"wrote {out}")
    return 0


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


if __name__ == "__main__":
    sys.exit(main())
