#!/usr/bin/env python
"""The exact order-parameter posterior at P = N = 10^4: `bayes-attn sample` and `bayes-attn theory`, timed and compared.

Runs the two commands on ``--config`` (default ``benchmarks/scale/sample_p1e4.toml``: the Markov 4-path task,
P = N = 10^4, T = 0.01, 1000 test inputs, NUTS 4 x (500 + 1000) from the Laplace start) one after the other, each
as its own process with ``--cpus all``, and records for each its wall time and peak resident memory (the child's
``VmHWM``), and for the run its sampling time (the run file's ``wall_time_s``), the gradients it took, its gates
(``bayes-attn diagnose``'s R-hat and ESS on the invariant quantities, divergences) and its test accuracy against
the theory's (:func:`bayes_attn.diagnostics.run_gaps`).

    .venv/bin/python benchmarks/scale/sample.py [--config ...] [--work runs/p1e4] [--reuse] [--out sample.json]

``--reuse`` reads the run and theory files already in ``--work`` (their times are read from them and from the
JSON written before, nothing is rerun).  Writes ``benchmarks/scale/sample.json`` (table in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).with_name("bayes-attn")


def timed(cmd: list[str]) -> dict:
    """Run ``cmd``; its wall seconds and its peak resident memory (VmHWM, read while it runs) in GB."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    peak = 0
    while proc.poll() is None:
        try:
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.5)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited with {proc.returncode}")
    return {"wall_s": time.perf_counter() - t0, "peak_rss_gb": peak / 1e6}


def run_row(run_file: Path, theory_file: Path) -> dict:
    import numpy as np

    from bayes_attn.diagnostics import run_gaps, summarize
    from bayes_attn.inference import read_run
    from bayes_attn.theory import read_theory

    dt = read_run(run_file)
    g = run_gaps(read_theory(theory_file), dt)
    rep = summarize(dt)
    steps = {
        grp: int(np.asarray(dt[grp].ds["n_steps"]).sum())
        for grp in ("warmup_sample_stats", "sample_stats")
        if grp in dt and "n_steps" in dt[grp].ds
    }
    draws = dt["sample_stats"].ds
    return {
        "sampling_s": float(dt.attrs["wall_time_s"]),
        "chains": int(g["chains"]),
        "draws": int(g["draws"]),
        "warmup": int(dt.attrs["warmup"]),
        "init": str(dt.attrs.get("init", "")),
        "gradients": steps,
        "steps_per_draw": float(np.asarray(draws["n_steps"]).mean()),
        "step_size": float(np.asarray(draws["step_size"]).mean()),
        "acceptance": float(np.asarray(draws["acceptance_rate"]).mean()),
        "max_rhat": rep.max_rhat,
        "min_ess_bulk": rep.min_ess_bulk,
        "min_ess_tail": rep.min_ess_tail,
        "divergences": int(rep.divergences),
        "gates_passed": bool(rep.passed),
        "acc_sampled": g["acc_sampled"],
        "acc_theory": g["acc_theory"],
        "acc_gap_pts": 100 * (g["acc_sampled"] - g["acc_theory"]),
        "mean_rel_err": g["mean_rel_err"],
        "U_rel_err": g["U_rel_err"],
        "theory_ok": bool(g["theory_ok"]),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=ROOT / "benchmarks" / "scale" / "sample_p1e4.toml")
    ap.add_argument("--work", type=Path, default=Path("runs/p1e4"), help="folder of the run and theory files")
    ap.add_argument("--reuse", action="store_true", help="read the files already in --work, run nothing")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "scale" / "sample.json")
    a = ap.parse_args(argv)
    import tomllib

    cfg = tomllib.loads(a.config.read_text())
    run_file, theory_file = a.work / "run.nc", a.work / "theory.nc"
    commands = {}
    if a.reuse:
        if a.out.is_file():
            commands = json.loads(a.out.read_text()).get("commands", {})
    else:
        a.work.mkdir(parents=True, exist_ok=True)
        for name, out in (("sample", run_file), ("theory", theory_file)):
            cmd = [str(BIN), name, str(a.config), "--out", str(out), "--cpus", "all"]
            commands[name] = timed(cmd + (["--no-progress"] if name == "theory" else []))
            print(f"{name}: {commands[name]['wall_s']:.1f} s, peak {commands[name]['peak_rss_gb']:.2f} GB", flush=True)
    row = run_row(run_file, theory_file)
    out = {
        "config": str(a.config.relative_to(ROOT)) if a.config.is_relative_to(ROOT) else str(a.config),
        "P": int(cfg["data"]["P"]),
        "N": int(cfg["network"]["width"]),
        "n_test": int(cfg["data"]["n_test"]),
        "max_tree_depth": int(cfg["sampler"].get("max_tree_depth", 10)),
        "machine": {"cpus": os.cpu_count()},
        "commands": commands,
        "run": row,
    }
    print(json.dumps(out, indent=1))
    from bayes_attn._io import atomic_write_json

    atomic_write_json(a.out, out)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
