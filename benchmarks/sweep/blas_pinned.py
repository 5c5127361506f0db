"""NumPy's BLAS in a process pinned to one core, with and without the one-thread limit (docs/design.md).

``bayes_attn._cache.pin_to_one_core`` pins every thread of a process to one core; NumPy's OpenBLAS, loaded
before that, keeps the threads it started for all the cores.  Each probe process times one
``(1000, 30, 200) @ (200, 200)`` product (what building the Markov task does) and one ``1500 x 1500``
Cholesky (scipy), after a warm-up call: unpinned; pinned with ``one_native_thread=False``; pinned with the
default limit (``bayes_attn._threads.limit_native_threads``).  Median of ``--repeats`` processes each.

    .venv/bin/python benchmarks/sweep/blas_pinned.py --out benchmarks/sweep/blas_pinned.json   # ~2 min
    .venv/bin/python benchmarks/sweep/blas_pinned.py --smoke --out /tmp/blas.json            # seconds (tests)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from bayes_attn._cache import usable_cores  # noqa: E402
from bayes_attn._io import atomic_write_json  # noqa: E402

PROBE = r"""
import json, os, sys, time
mode, n = sys.argv[1], int(sys.argv[2])
import numpy as np, scipy.linalg
if mode != "unpinned":
    from bayes_attn._cache import pin_to_one_core
    pin_to_one_core(0, one_native_thread=mode == "pinned_one_thread")
from threadpoolctl import threadpool_info
rng = np.random.default_rng(0)
z, m = rng.standard_normal((n, 30, 200)), rng.standard_normal((200, 200))
a = rng.standard_normal((1500, 1500)); a = a @ a.T + 1500 * np.eye(1500)
z[:2] @ m; scipy.linalg.cholesky(a[:50, :50])
t = time.perf_counter(); z @ m; t_mm = time.perf_counter() - t
t = time.perf_counter(); scipy.linalg.cholesky(a); t_ch = time.perf_counter() - t
print(json.dumps({"matmul_s": t_mm, "cholesky_s": t_ch,
                  "blas_threads": max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")}))
"""

MODES = ("unpinned", "pinned_no_limit", "pinned_one_thread")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "blas_pinned.json"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="n = 50 sequences, one repeat")
    args = ap.parse_args(argv)
    n, repeats = (50, 1) if args.smoke else (1000, args.repeats)
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    }
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    rows = []
    for mode in MODES:
        runs = []
        for _ in range(repeats):  # interleaving is not needed: one probe process at a time
            out = subprocess.run(
                [sys.executable, "-c", PROBE, mode, str(n)], env=env, capture_output=True, text=True, check=True
            )
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        rows.append(
            {
                "mode": mode,
                "runs": runs,
                "blas_threads": runs[0]["blas_threads"],
                "matmul_s_median": statistics.median(r["matmul_s"] for r in runs),
                "cholesky_s_median": statistics.median(r["cholesky_s"] for r in runs),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    base = rows[0]
    for r in rows:
        r["matmul_vs_unpinned"] = r["matmul_s_median"] / base["matmul_s_median"]
        r["cholesky_vs_unpinned"] = r["cholesky_s_median"] / base["cholesky_s_median"]
    cores = usable_cores()
    res = {
        "meta": {
            "sequences": n,
            "repeats": repeats,
            "cores": cores,
            "smoke": args.smoke,
            "platform": platform.platform(),
            "load_avg_start": os.getloadavg()[0],
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        },
        "rows": rows,
    }

    print(f"wrote {atomic_write_json(args.out, res, field='--out')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
