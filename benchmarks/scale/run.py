#!/usr/bin/env python
"""The P x P route against path space (docs/theory.md §4.10) as the training set grows.

On the Markov 4-path task (``r = N_0 n_pi = 924``) at width ``N = P``, ``T = 0.01``, for each ``P`` and route
(``dense``: the P x P kernel; ``path``: the ``r`` path-space points): the seconds of one log-density + gradient
evaluation of the order-parameter model (compiled, the median of ``--repeats`` calls after a first one), of one
saddle-point solve, of the path-space factorisation itself, and the bytes of the kernel data the evaluation
holds; and the relative difference of the two routes where both ran.  The dense route runs up to
``--dense-max`` (its blocks and factor grow as P^2).  One process, one job at a time; the process's peak
resident memory after each size is recorded too (it only grows).

    .venv/bin/python benchmarks/scale/run.py [--sizes 100 300 1000 3000 10000 30000] [--out results.json]
    .venv/bin/python benchmarks/scale/run.py --smoke --out /tmp/scale.json     # two tiny sizes (tests)
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _timed(f, repeats: int):
    import jax

    jax.block_until_ready(f())  # compile + first call
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(f())
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def run_size(P: int, routes, repeats: int, n_test: int) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from bayes_attn.inference.models import build_model
    from bayes_attn.linalg import path_space
    from bayes_attn.tasks import markov_task
    from bayes_attn.theory import solve

    t = time.perf_counter()
    task = markov_task(P=P, n_test=n_test)
    spec = task.spec(width=P, temperature=0.01)
    phi = task.phi("train", spec)
    task.phi("test", spec)
    row = {"P": P, "r": int(phi.shape[1] * phi.shape[2]), "data_s": time.perf_counter() - t, "routes": {}}
    t = time.perf_counter()
    path_space(np.asarray(phi), task.y_train)
    row["factorise_s"] = time.perf_counter() - t
    values = {}
    for route in routes:
        model, args = build_model(task, spec, "order_parameters", path_space=route)
        rng = np.random.default_rng(0)
        xi = {k: jnp.asarray(0.3 * rng.standard_normal(s)) for k, s in model.site_shapes().items()}
        vg = jax.jit(jax.value_and_grad(model.log_density))
        grad_s = _timed(lambda: vg(xi, args), repeats)
        values[route] = vg(xi, args)
        t = time.perf_counter()
        sol = solve(spec, phi, task.y_train, path_space=route)
        solve_s = time.perf_counter() - t
        kd = args.kernels.train
        nbytes = sum(int(a.nbytes) for a in jax.tree.leaves(kd))
        row["routes"][route] = {
            "grad_s": grad_s,
            "solve_s": solve_s,
            "solve_ok": bool(sol.status.ok),
            "solve_status": sol.status.message,
            "kernel_bytes": nbytes,
            "points": int(kd.phi_a.shape[0]),
            "U": np.asarray(sol.U).tolist(),
        }
    if len(values) == 2:
        (vd, gd), (vp, gp) = values["dense"], values["path"]
        gd, gp = jax.tree.leaves(gd), jax.tree.leaves(gp)
        row["rel_diff_value"] = float(abs(vd - vp) / abs(vd))
        row["rel_diff_grad"] = float(max(np.max(np.abs(a - b)) / np.max(np.abs(a)) for a, b in zip(gd, gp)))
        Ud, Up = (np.asarray(row["routes"][k]["U"]) for k in ("dense", "path"))
        row["rel_diff_U"] = float(np.max(np.abs(Ud - Up)) / np.max(np.abs(Ud)))
    row["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000, 3000, 10000, 30000])
    ap.add_argument("--dense-max", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--n-test", type=int, default=200)
    ap.add_argument("--smoke", action="store_true", help="sizes 100 and 1000, 2 repeats")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "scale" / "results.json")
    a = ap.parse_args(argv)
    if a.smoke:
        a.sizes, a.repeats, a.n_test = [100, 1000], 2, 20
    import bayes_attn  # noqa: F401  (float64)

    rows = []
    for P in a.sizes:
        routes = ("dense", "path") if P <= a.dense_max else ("path",)
        row = run_size(P, routes, a.repeats, a.n_test)
        rows.append(row)
        parts = [f"{k} grad {v['grad_s'] * 1e3:.1f} ms, solve {v['solve_s']:.2f} s" for k, v in row["routes"].items()]
        print(f"P={P}: " + "; ".join(parts) + f"; peak {row['peak_rss_gb']:.2f} GB", flush=True)
    out = {
        "task": "markov, 4 paths, N = P, T = 0.01",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "repeats": a.repeats,
        "rows": rows,
    }
    from bayes_attn._io import atomic_write_json

    atomic_write_json(a.out, out)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
