"""Several JAX processes on few cores: pinned vs unpinned, side by side (docs/design.md).

Each process runs 400 calls of one small jitted program (a 300 x 300 Cholesky of ``a a^T``, the size of a
sampler step) after compiling it; we time those calls.  Variants: ``XLA_FLAGS`` empty,
``--xla_cpu_multi_thread_eigen=false`` (what the package sets), and that plus the TensorFlow-style
``intra_op_parallelism_threads=1`` token; each with 1 and with ``ncores`` processes at once, unpinned and
pinned one process per core (``bayes_attn._cache.pin_to_one_core``).  Median of ``--repeats``.

    .venv/bin/python benchmarks/sweep/pinning.py --out benchmarks/sweep/pinning.json   # ~5 min on 2 cores
    .venv/bin/python benchmarks/sweep/pinning.py --smoke --out /tmp/pinning.json      # seconds (tests)
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
import os, sys, time
flags, index, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if flags:
    os.environ["XLA_FLAGS"] = flags
if index >= 0:
    from bayes_attn._cache import pin_to_one_core
    pin_to_one_core(index)
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
f = jax.jit(lambda a: jnp.linalg.cholesky(a @ a.T + 1e-3 * jnp.eye(a.shape[0])).sum())
a = jnp.ones((300, 300)) * 0.01 + jnp.eye(300)
f(a).block_until_ready()
t = time.perf_counter()
for i in range(calls):
    f(a + i * 1e-6).block_until_ready()
print(time.perf_counter() - t)
"""

FLAGS = {
    "none": "",
    "eigen_off": "--xla_cpu_multi_thread_eigen=false",
    "eigen_off_intra_op_token": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
}


def one(flags: str, n: int, pinned: bool, calls: int) -> list[float]:
    """Seconds of the timed loop of each of ``n`` processes started together."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PROBE, flags, str(i if pinned else -1), str(calls)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        for i in range(n)
    ]
    return [float(p.communicate()[0].strip().splitlines()[-1]) for p in procs]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "pinning.json"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="20 calls, one repeat")
    args = ap.parse_args(argv)
    calls, repeats = (20, 1) if args.smoke else (400, args.repeats)
    ncores = usable_cores()
    rows = []
    for name, flags in FLAGS.items():
        for pinned in (False, True):
            for n in sorted({1, ncores}):
                runs = [one(flags, n, pinned, calls) for _ in range(repeats)]
                per = [statistics.median(r) for r in runs]  # median over the processes of a run
                rows.append(
                    {
                        "flags": name,
                        "xla_flags": flags,
                        "pinned": pinned,
                        "processes": n,
                        "loop_s_runs": per,
                        "loop_s_median": statistics.median(per),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    alone = {(r["flags"], r["pinned"]): r["loop_s_median"] for r in rows if r["processes"] == 1}
    for r in rows:
        r["slowdown_vs_one_alone_unpinned"] = r["loop_s_median"] / alone[(r["flags"], False)]
    res = {
        "meta": {
            "calls": calls,
            "repeats": repeats,
            "cores": ncores,
            "smoke": args.smoke,
            "platform": platform.platform(),
            "load_avg_start": os.getloadavg()[0],
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        },
        "rows": rows,
    }

    out = atomic_write_json(args.out, res, field="--out")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
