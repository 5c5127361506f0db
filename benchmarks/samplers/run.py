"""Sampler benchmark: Markov 4-path task, P = 100, T = 0.01 (docs/samplers.md).

Every (sampler, width) cell runs in its own process under a wall-clock budget; a cell that
does not finish is reported as ``"status": "timeout"``.  Per cell: wall time (process, incl.
compilation, and sampling alone), gradient or Gram evaluations after warm-up, minimum bulk
ESS over the test predictions and the entries of ``U``, ESS/s, max R-hat, peak RSS, and
the ESS/s ratio to NUTS on the full model at the same width.

    .venv/bin/python benchmarks/samplers/run.py --out benchmarks/samplers/results.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

#: sampler name -> SamplerConfig fields (chains, seed, progress from the command line)
SAMPLERS = {
    "nuts_full": dict(kind="nuts", collapsed=False, warmup=100, draws=100),
    "nuts_collapsed": dict(kind="nuts", model="collapsed", warmup=100, draws=100),
    "mala": dict(kind="mala", model="collapsed", warmup=500, draws=2000, thinning=4),
    "ula": dict(kind="ula", model="collapsed", warmup=500, draws=2000, thinning=4),
    "gibbs": dict(kind="gibbs", model="collapsed", warmup=50, draws=300),
    "gibbs_full": dict(kind="gibbs", collapsed=False, warmup=50, draws=300),
    # the exact order-parameter posterior (docs/wishart.md): same posterior of f, cost independent of N
    "wishart": dict(model="order_parameters", warmup=500, draws=1000),
}


def run_cell(name: str, width: int, chains: int, n_test: int, seed: int) -> dict:
    t_start = time.perf_counter()
    from bayes_attn.inference import request_host_devices

    request_host_devices(chains)
    import numpy as np

    from bayes_attn.diagnostics import summarize
    from bayes_attn.inference import SamplerConfig, sample
    from bayes_attn.tasks import markov_task

    task = markov_task(P=100, n_test=n_test, paths=4)
    spec = task.spec(width=width, temperature=0.01)
    # progress bar on stderr: the parent reads how far a timed-out cell got
    cfg = SamplerConfig(chains=chains, seed=seed, progress_bar=True, **SAMPLERS[name])
    dt = sample(task, spec, cfg)
    wall = time.perf_counter() - t_start
    ru = resource.getrusage(resource.RUSAGE_SELF)
    cpu = ru.ru_utime + ru.ru_stime
    table = summarize(dt).table  # the same verdict function as bayes-attn diagnose
    stats = dt["sample_stats"].ds
    # post-warm-up work: leapfrog steps / gradient evaluations (nuts, mala, ula) or P x P Gram solves (gibbs);
    # stored under the names of the 2026-11-30 results file so that cells stay comparable
    evals = {}
    if "n_steps" in stats:
        evals["n_gram_evals" if cfg.kind == "gibbs" else "n_grad_evals"] = int(stats["n_steps"].values.sum())
    ess = float(np.nanmin(table["ess_bulk"].values))
    out = dict(
        sampler=name,
        width=width,
        status="ok",
        config=SAMPLERS[name],
        chains=chains,
        wall_s=wall,
        sampling_s=float(dt.attrs["wall_time_s"]),
        ess_bulk_min=ess,
        ess_bulk_min_f=float(np.nanmin(table.loc[[i for i in table.index if i.startswith("f")], "ess_bulk"])),
        ess_per_s=ess / wall,
        cpu_s=cpu,
        ess_per_cpu_s=ess / cpu,
        rhat_max=float(np.nanmax(table["r_hat"].values)),
        divergences=int(stats["diverging"].values.sum()) if "diverging" in stats else 0,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        **evals,
    )
    if "acceptance_rate" in stats:
        out["acceptance_mean"] = float(stats["acceptance_rate"].values.mean())
    if "step_size" in stats:
        out["step_size_mean"] = float(stats["step_size"].values.mean())
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="benchmarks/samplers/results.json")
    p.add_argument("--widths", type=int, nargs="+", default=[10, 100, 1000])
    p.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=list(SAMPLERS))
    p.add_argument("--budget", type=float, default=600.0, help="wall-clock seconds per cell")
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--n-test", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--table", action="store_true", help="print the results in --out as a markdown table")
    p.add_argument("--recompute", action="store_true", help="recompute ratios and bounds in --out, run nothing")
    p.add_argument("--cell", nargs=2, metavar=("SAMPLER", "WIDTH"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.cell:
        print("RESULT " + json.dumps(run_cell(args.cell[0], int(args.cell[1]), args.chains, args.n_test, args.seed)))
        return 0
    if args.table:
        print(table(json.loads(Path(args.out).read_text())["cells"]))
        return 0
    if args.recompute:  # ratios and bounds of an existing results file (e.g. after a code change)
        _write(Path(args.out), json.loads(Path(args.out).read_text())["cells"], args)
        return 0
    out = Path(args.out)
    results = json.loads(out.read_text())["cells"] if out.is_file() else []
    done = {(r["sampler"], r["width"]) for r in results}
    for width in args.widths:
        for name in args.samplers:
            if (name, width) in done:
                continue
            cmd = [
                sys.executable,
                __file__,
                "--cell",
                name,
                str(width),
                "--chains",
                str(args.chains),
                "--n-test",
                str(args.n_test),
                "--seed",
                str(args.seed),
            ]
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.budget)
                lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
                if proc.returncode == 0 and lines:
                    res = json.loads(lines[-1][7:])
                else:
                    res = dict(sampler=name, width=width, status="error", error=proc.stderr[-2000:])
            except subprocess.TimeoutExpired as exc:
                err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
                done_it = re.findall(r"(\d+)/(\d+) \[", err)
                res = dict(
                    sampler=name,
                    width=width,
                    status="timeout",
                    wall_s=time.perf_counter() - t0,
                    note=f"did not finish within the {args.budget:.0f} s budget",
                    progress=f"{done_it[-1][0]}/{done_it[-1][1]} iterations" if done_it else "n/a",
                )
            res["load_avg_before"] = load
            res["budget_s"] = args.budget
            results.append(res)
            print(
                json.dumps(
                    {
                        k: res.get(k)
                        for k in (
                            "sampler",
                            "width",
                            "status",
                            "wall_s",
                            "ess_bulk_min",
                            "ess_per_s",
                            "rhat_max",
                            "peak_rss_mb",
                        )
                    }
                ),
                flush=True,
            )
            _write(out, results, args)
    _write(out, results, args)
    return 0


def table(cells: list) -> str:
    """Markdown table of the benchmark cells (one row per sampler and width)."""
    head = (
        "| width | sampler | status | wall s | CPU s | post-warm-up evals | min ESS bulk (f, U) | ESS/s | "
        "max R-hat | peak RSS MB | ESS/s ÷ NUTS full | ESS/CPU-s ÷ NUTS full |"
    )
    rows = [head, "|" + "---|" * (head.count("|") - 1)]
    fmt = lambda v, f="{:.3g}": "–" if v is None else f.format(v)  # noqa: E731
    for c in sorted(cells, key=lambda c: (c["width"], list(SAMPLERS).index(c["sampler"]))):
        evals = c.get("n_grad_evals", c.get("n_gram_evals"))
        kind = "grad" if "n_grad_evals" in c else ("Gram" if "n_gram_evals" in c else "")
        status = c["status"] if c["status"] != "timeout" else f"timeout ({c.get('progress', 'n/a')})"
        rows.append(
            f"| {c['width']} | {c['sampler']} | {status} | {fmt(c.get('wall_s'), '{:.0f}')} | "
            f"{fmt(c.get('cpu_s'), '{:.0f}')} | {fmt(evals, '{:d}')} {kind} | {fmt(c.get('ess_bulk_min'))} | "
            f"{fmt(c.get('ess_per_s')) if 'ess_per_s_upper_bound' not in c else '≤ ' + fmt(c['ess_per_s_upper_bound'])} | "
            f"{fmt(c.get('rhat_max'), '{:.3f}')} | "
            f"{fmt(c.get('peak_rss_mb'), '{:.0f}')} | "
            f"{fmt(c.get('ratio_to_nuts_full')) if 'ratio_to_nuts_full_lower_bound' not in c else '≥ ' + fmt(c['ratio_to_nuts_full_lower_bound'])} | "
            f"{fmt(c.get('cpu_ratio_to_nuts_full'))} |"
        )
    return "\n".join(rows)


def ess_per_s_upper_bound(cell: dict, chains: int) -> float | None:
    """Upper bound on the ESS/s of a timed-out cell: its draws (``chains x draws``) would have
    needed at least ``wall x total / done`` seconds at the rate it reached, and the bound takes
    the bulk ESS to be at most the number of draws (NUTS can exceed it by antithetic moves;
    docs/samplers.md also states the bound at twice the draws)."""
    m = re.match(r"(\d+)/(\d+) iterations", cell.get("progress", ""))
    if not m or int(m.group(1)) == 0:
        return None
    done, total = int(m.group(1)), int(m.group(2))
    draws = SAMPLERS[cell["sampler"]]["draws"]
    return chains * draws / (cell["wall_s"] * total / done)


def _write(out: Path, results: list, args) -> None:
    by = {(r["sampler"], r["width"]): r for r in results}
    for r in results:
        ref = by.get(("nuts_full", r["width"]))
        if r.get("status") == "ok" and ref and ref.get("status") == "ok":
            r["ratio_to_nuts_full"] = r["ess_per_s"] / ref["ess_per_s"]
            r["cpu_ratio_to_nuts_full"] = r["ess_per_cpu_s"] / ref["ess_per_cpu_s"]
        elif r.get("status") == "ok" and ref and ref.get("status") == "timeout":
            ub = ess_per_s_upper_bound(ref, args.chains)
            if ub is not None:
                ref["ess_per_s_upper_bound"] = ub
                r["ratio_to_nuts_full_lower_bound"] = r["ess_per_s"] / ub
    meta = dict(
        task="markov 4-path, P=100, n_test=%d, T=0.01" % args.n_test,
        chains=args.chains,
        cpu_count=os.cpu_count(),
        platform=platform.platform(),
        date=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        note="wall times include JIT compilation; each cell's load_avg_before and budget_s are recorded "
        "(cells may be run in several invocations with different budgets); cpu_s is the process's "
        "user+sys time",
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "cells": results}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
