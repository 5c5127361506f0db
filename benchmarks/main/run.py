"""The main job end to end (``scripts/reproduce_markov.sh``, what ``./run.sh main`` runs after the install), cold and
warm, with its outputs checked.

Each repeat runs the job twice into fresh output folders: **cold**, with an empty compilation cache of its own
(``BAYES_ATTN_CACHE_DIR``: no compiled or exported program from an earlier run, as on a new machine or in
CI), then **warm**, with the cache the cold run filled (every later run on the same machine and package
version).  Recorded per run: the job's wall time, the sweep's (the ``sweep of 4 cells: N s`` line), each
cell's ``wall_s`` and ``compile_s`` (``sweep.nc``), the number of PASS verdicts printed (4 by the figure
script, 4 by ``bayes-attn diagnose``) and the sampled accuracies, which every run must reproduce (the draws
do not depend on the cache).

    .venv/bin/python benchmarks/main/run.py --repeats 2 --out benchmarks/main/results.json   # ~10 min, 2 idle cores

Run it on an idle machine, one job at a time: the job itself uses both cores.  The table in
docs/benchmarks.md ("Main job") is generated from the JSON (``scripts/tables/bench_main.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "scripts/reproduce_markov.sh"


def run_job(run_dir: Path, cache: Path) -> dict:
    """One run of the main job into ``run_dir`` with the compilation cache at ``cache``."""
    env = {**os.environ, "RUN_DIR": str(run_dir), "BAYES_ATTN_CACHE_DIR": str(cache)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("BAYES_ATTN_CPUS", None)
    t0 = time.perf_counter()
    proc = subprocess.run(["bash", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the main job failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    sweep = re.search(r"sweep of \d+ cells: (\d+) s", proc.stdout)
    import xarray as xr

    with xr.open_dataset(run_dir / "markov4" / "sweep" / "sweep.nc", engine="h5netcdf") as ds:
        cells = {
            str(c): {"wall_s": float(w), "compile_s": float(k)}
            for c, w, k in zip(ds["cell"].values.ravel(), ds["wall_s"].values.ravel(), ds["compile_s"].values.ravel())
        }
    results = json.loads((run_dir / "markov4" / "results.json").read_text())
    return {
        "wall_s": wall,
        "sweep_s": float(sweep.group(1)) if sweep else None,
        "passes": len(re.findall(r"^(?:PASS \(|sampled N=.*PASS$)", proc.stdout, re.M)),
        "fails": len(re.findall(r"^FAIL|sampled N=.*FAIL$", proc.stdout, re.M)),
        "accuracy_sampled": {n: v["accuracy"] for n, v in results["sampled"].items()},
        "cells": cells,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2, help="cold + warm pairs (default 2)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results.json")
    args = ap.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            cache = Path(tmp) / f"cache{r}"
            for mode in ("cold", "warm"):
                res = {"repeat": r, "mode": mode, **run_job(Path(tmp) / f"run{r}-{mode}", cache)}
                runs.append(res)
                print(
                    f"repeat {r} {mode}: {res['wall_s']:.1f} s (sweep {res['sweep_s']} s), {res['passes']} PASS",
                    flush=True,
                )
    accs = {json.dumps(r["accuracy_sampled"], sort_keys=True) for r in runs}
    out = {
        "command": f"bash {SCRIPT}",
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "same_outputs": len(accs) == 1,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}; the same sampled accuracies in every run: {out['same_outputs']}")


if __name__ == "__main__":
    main()
