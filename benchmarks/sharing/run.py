"""Two commands at once on a small machine: wall time of ``bayes-attn sample`` of the N = 10 order-parameter
cell (``cell.toml``) alone and two started together, under each ``--cpus`` placement, on the idle machine.

    python benchmarks/sharing/run.py [--repeats 2] [--unpinned-pairs 1] [--out benchmarks/sharing/results.json]

Placements: ``--cpus 1`` (the default: each process claims the least-loaded free core and pins to it,
bayes_attn._cpus) and ``--cpus all`` (unpinned: every process may run on every core, as before the claim).
Every process runs with a warm compilation cache of its own (a first, untimed run fills it), so the times
compare placements, not compilation.  The ratio of interest is each concurrent run's time over the lone run's
of the same placement, and the lone ``--cpus 1`` run over the lone ``--cpus all`` run.
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
CELL = HERE / "cell.toml"


def launch(cpus: str, out: Path, cache: Path) -> subprocess.Popen:
    env = {**os.environ, "BAYES_ATTN_CACHE_DIR": str(cache)}
    env.pop("BAYES_ATTN_CPUS", None)
    cmd = [
        sys.executable,
        "-m",
        "bayes_attn.cli",
        "sample",
        str(CELL),
        "--out",
        str(out),
        "--quiet",
        "--no-progress",
        "--cpus",
        cpus,
    ]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def timed(cpus: str, n: int, tmp: Path, cache: Path) -> list[float]:
    """Start ``n`` identical commands together; the wall time of each."""
    t0 = time.perf_counter()
    procs = [launch(cpus, tmp / f"run{i}.nc", cache) for i in range(n)]
    times = [0.0] * n
    pending = set(range(n))
    while pending:
        for i in list(pending):
            if procs[i].poll() is not None:
                times[i] = time.perf_counter() - t0
                pending.discard(i)
                if procs[i].returncode != 0:
                    raise SystemExit(f"run failed ({cpus}): {procs[i].stderr.read()[-2000:]}")
        time.sleep(0.05)
    return times


def summarize(rows) -> list[dict]:
    """Per placement and run (the date of a benchmark run; ``--merge`` keeps rows of earlier runs): the lone
    runs' median, the slower of each pair (median), and the ratios within that run."""
    out = []
    for cpus, run in dict.fromkeys((r["cpus"], r.get("run", "earlier")) for r in rows):
        same = [r for r in rows if r["cpus"] == cpus and r.get("run", "earlier") == run]
        lone = [r["seconds"][0] for r in same if r["processes"] == 1]
        both = [max(r["seconds"]) for r in same if r["processes"] == 2]
        unpinned = [r["seconds"][0] for r in rows if r["cpus"] == "all" and r["processes"] == 1 and r.get("run") == run]
        lone_s = statistics.median(lone) if lone else None
        pair_s = statistics.median(both) if both else None
        out.append(
            {
                "cpus": cpus,
                "run": run,
                "lone_median_s": lone_s,
                "concurrent_slowest_median_s": pair_s,
                "concurrent_over_lone": pair_s / lone_s if pair_s and lone_s else None,
                "lone_over_unpinned_lone": lone_s / statistics.median(unpinned) if lone_s and unpinned else None,
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--placements", nargs="+", default=["1", "all"])
    ap.add_argument(
        "--unpinned-pairs",
        type=int,
        default=1,
        help="repeats of the two unpinned runs at once (each takes many times a lone run)",
    )
    ap.add_argument("--out", default=str(HERE / "results.json"))
    ap.add_argument(
        "--merge",
        action="store_true",
        help="keep the rows not run now (placements, or the unpinned pairs with --unpinned-pairs 0) from the existing "
        "--out file",
    )
    a = ap.parse_args()
    rows = []
    kept = []
    today = time.strftime("%Y-%m-%d", time.gmtime())
    if a.merge and Path(a.out).is_file():
        rerun = {(c, n) for c in a.placements for n in (1, 2) if not (c == "all" and n == 2 and a.unpinned_pairs == 0)}
        old = json.loads(Path(a.out).read_text())["rows"]
        kept = [{"run": "earlier", **r} for r in old if (r["cpus"], r["processes"]) not in rerun]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cache = tmp / "cache"
        timed("all", 1, tmp, cache)  # fills the compilation cache (untimed)
        for rep in range(a.repeats):
            for cpus in a.placements:
                for n in (1, 2):
                    if cpus == "all" and n == 2 and rep >= a.unpinned_pairs:
                        continue
                    t = timed(cpus, n, tmp, cache)
                    rows.append({"cpus": cpus, "processes": n, "repeat": rep, "seconds": t, "run": today})
                    print(json.dumps(rows[-1]), flush=True)
    rows = kept + rows
    summary = summarize(rows)
    for s in summary:
        pair = s["concurrent_slowest_median_s"]
        print(
            f"--cpus {s['cpus']} ({s['run']}): lone {s['lone_median_s']:.1f} s"
            + (
                f", two at once (slower of the two) {pair:.1f} s = {s['concurrent_over_lone']:.2f}x lone"
                if pair
                else ""
            )
        )
    machine = {
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    tmp_out = Path(a.out).with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps({"cell": CELL.name, "machine": machine, "rows": rows, "summary": summary}, indent=1))
    os.replace(tmp_out, a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
