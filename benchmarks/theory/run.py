"""Theory solver benchmark: median of 5 solves after compilation (docs/theory_solver.md).

Problems: the Markov 4-path task (P=100, T=0.01, N=10, 100, 1000) and a 16-path problem
(L=2, H=4, P=600, N0=192, S=48, random qk attention, N=100, T=0.1).  With ``--reference``
it also reports the relative agreement of the Newton solution with the independent block
fixed-point reference (Markov task).

    .venv/bin/python benchmarks/theory/run.py --out benchmarks/theory/results.json [--reference]

Timings are wall-clock medians on whatever CPU is available; on a shared machine they
depend on the load (the load average is recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

import bayes_attn  # noqa: F401  (float64)
from bayes_attn.network import HeadLayer
from bayes_attn.tasks import Task, markov_task
from bayes_attn.theory import reference_solve, solve


def sixteen_path_task(P=600, S=48, n0=192, H=4, d_qk=16, seed=0) -> Task:
    rng = np.random.default_rng(seed)
    layers = tuple(
        HeadLayer.qk(rng.standard_normal((H, d_qk, n0)) / np.sqrt(n0), rng.standard_normal((H, d_qk, n0)) / np.sqrt(n0))
        for _ in range(2)
    )
    x = rng.standard_normal((P, S, n0))
    y = np.sign(x[:, :, 0].mean(axis=1) + 0.1 * rng.standard_normal(P))
    xt = rng.standard_normal((10, S, n0))
    return Task(x, y, xt, np.ones(10), layers, name="random16")


def bench(task, spec, repeats=5):
    """Wall-clock and process CPU time (all threads) of ``repeats`` solves after a first (compiling) one."""
    phi = task.phi("train", spec)
    t0 = time.perf_counter()
    sol = solve(spec, phi, task.y_train)
    first = time.perf_counter() - t0
    times, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        sol = solve(spec, phi, task.y_train)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    st = sol.status
    return sol, {
        "first_call_s": first,
        "median_s": statistics.median(times),
        "times_s": times,
        "median_cpu_s": statistics.median(cpu),
        "iterations": st.iterations,
        "grad_norm": st.grad_norm,
        "converged": st.converged,
        "hessian_pd": st.hessian_pd,
        "hessian_min_eig": st.hessian_min_eig,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/theory/results.json")
    ap.add_argument("--reference", action="store_true", help="also check agreement with the reference solver")
    ap.add_argument("--skip-16", action="store_true", help="skip the 16-path problem")
    ap.add_argument("--skip-markov", action="store_true", help="skip the Markov problem")
    ap.add_argument("--repeats", type=int, default=5, help="timed solves after the first (default 5)")
    args = ap.parse_args()
    rows = []
    markov = markov_task(P=100, n_test=100)
    for N in () if args.skip_markov else (10, 100, 1000):
        spec = markov.spec(width=N, temperature=0.01)
        sol, row = bench(markov, spec, args.repeats)
        row.update(problem="markov 4 paths, P=100, T=0.01", width=N, n_paths=4)
        if args.reference:
            t0 = time.perf_counter()
            ref = reference_solve(spec, markov.phi("train", spec), markov.y_train)
            row["reference_s"] = time.perf_counter() - t0
            row["reference_iterations"] = ref.iterations
            row["reference_rel_diff"] = max(
                float(np.linalg.norm(a - b) / np.linalg.norm(b)) for a, b in zip(sol.Us, ref.Us)
            )
        rows.append(row)
        print(row, flush=True)
    if not args.skip_16:
        task = sixteen_path_task()
        spec = task.spec(width=100, temperature=0.1, readout="mean")
        _, row = bench(task, spec, args.repeats)
        row.update(problem="random qk, L=2, H=4, P=600, N0=192, S=48, T=0.1", width=100, n_paths=16)
        rows.append(row)
        print(row, flush=True)
    meta = {
        "cpu_count": os.cpu_count(),
        "load_average": os.getloadavg(),
        "machine": platform.machine(),
        "note": f"medians of {args.repeats} solves after compilation (wall clock and process CPU time "
        "over all threads); CPU shared with other jobs",
    }
    with open(args.out, "w") as fh:
        json.dump({"meta": meta, "rows": rows}, fh, indent=2)
    print(f"\n{'problem':52s} {'N':>5s} {'median s':>9s} {'cpu s':>7s} {'iters':>5s} {'rel grad':>9s} {'ref diff':>9s}")
    for r in rows:
        ref = f"{r['reference_rel_diff']:.1e}" if "reference_rel_diff" in r else "-"
        print(
            f"{r['problem']:52s} {r['width']:5d} {r['median_s']:9.3f} {r['median_cpu_s']:7.2f} {r['iterations']:5d} "
            f"{r['grad_norm']:9.1e} {ref:>9s}"
        )
    print(f"load average {meta['load_average']}; wrote {args.out}")


if __name__ == "__main__":
    main()
