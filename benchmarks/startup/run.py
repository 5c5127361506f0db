"""Start-up benchmark: ``bayes-attn theory`` end to end on three widths (benchmarks/startup/theory.toml), cold and
warm, with the traced programs kept on disk (bayes_attn._programs, the default) and without them (every process
traces its programs again), side by side.

Cold: every run in a fresh, empty cache folder (``BAYES_ATTN_CACHE_DIR``): tracing, lowering and XLA compilation
all paid.  Warm: a folder filled by one earlier run of the same variant.  The variants alternate run by run
(A B A B ...), so that drift of the machine's speed falls on both; each process is pinned to one core (the
command line's default).  Medians and every run's time go to ``--out`` (JSON); the table in docs/design.md
("Start-up") is generated from it (scripts/tables/bench_startup.py).

    python benchmarks/startup/run.py --out benchmarks/startup/results.json          # 5 runs per cell
    python benchmarks/startup/run.py --runs 1 --config tiny.toml --out /tmp/s.json  # smoke (the tests)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "theory.toml"

#: runs the command line in this process, with the traced-program cache turned off for the "trace" variant
LAUNCH = """
import sys
if sys.argv[1] == "trace":
    import bayes_attn._programs as programs
    programs.program_dir = lambda: None  # every process traces and lowers its programs (the earlier behaviour)
from bayes_attn.cli import main
sys.argv = ["bayes-attn", *sys.argv[2:]]
sys.exit(main())
"""

VARIANTS = {"disk": "traced programs kept on disk (default)", "trace": "programs traced in every process"}


def one_run(variant: str, cache: Path, out: Path, config: Path = CONFIG) -> float:
    env = {**os.environ, "BAYES_ATTN_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-c", LAUNCH, variant, "theory", str(config), "--out", str(out), "--no-progress"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{variant} run failed:\n{proc.stderr[-2000:]}")
    return wall


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=5, help="runs per variant and mode")
    ap.add_argument("--config", type=Path, default=CONFIG, help="theory config (default: theory.toml here)")
    args = ap.parse_args(argv)
    times = {v: {"cold": [], "warm": []} for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="bayes_attn-startup-") as tmp:
        tmp = Path(tmp)
        warm_cache = {v: tmp / f"warm-{v}" for v in VARIANTS}
        for v in VARIANTS:  # fill each variant's warm cache once (not timed)
            one_run(v, warm_cache[v], tmp / "fill.nc", args.config)
        for i in range(args.runs):
            for mode in ("cold", "warm"):
                for v in VARIANTS:
                    cache = tmp / f"cold-{v}-{i}" if mode == "cold" else warm_cache[v]
                    times[v][mode].append(one_run(v, cache, tmp / f"{v}.nc", args.config))
                    print(f"{v} {mode} {times[v][mode][-1]:.2f} s", flush=True)
    out = {
        "how": f"python benchmarks/startup/run.py --runs {args.runs}",
        "command": f"bayes-attn theory {args.config.name} (Markov 4 paths, P = 100, 3 widths)"
        if args.config == CONFIG
        else f"bayes-attn theory {args.config}",
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "variants": VARIANTS,
        "authors_cold_s": 9.6,
        "authors_note": "the authors' PyTorch solver on the same problem (issue 27)",
        "times_s": times,
        "median_s": {v: {m: statistics.median(t) for m, t in d.items()} for v, d in times.items()},
    }
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1))
    print(json.dumps(out["median_s"]))


if __name__ == "__main__":
    main()
