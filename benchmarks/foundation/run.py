"""Full vs collapsed NUTS on the Markov 4-path task (P=100, N=10, T=0.01), 4 chains x (500 + 500).

Runs the two models alternately ``--repeats`` times in one process and reports median wall times,
their ratio, and the convergence gates (R-hat, bulk ESS on every test prediction and U entry).
Writes JSON next to this file (or ``--out``).

    python benchmarks/foundation/run.py --repeats 3
"""

import argparse
import json
import statistics
import time
from pathlib import Path

import bayes_attn  # noqa: F401
from bayes_attn.inference import request_host_devices

request_host_devices(4)

from bayes_attn.diagnostics import summarize  # noqa: E402
from bayes_attn.inference import SamplerConfig, predictor_statistics, sample  # noqa: E402
from bayes_attn.tasks import markov_task  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--width", type=int, default=10)
    ap.add_argument(
        "--models",
        nargs="+",
        default=["full", "collapsed"],
        choices=["full", "collapsed"],
        help="which models to time (the ratio needs both)",
    )
    ap.add_argument("--out", default=str(Path(__file__).with_name("results.json")))
    args = ap.parse_args()
    task = markov_task(P=100, n_test=1000, paths=4)
    spec = task.spec(width=args.width, temperature=0.01)
    rows = {m: [] for m in args.models}
    for rep in range(args.repeats):
        for name in rows:
            cfg = SamplerConfig(
                collapsed=name == "collapsed", chains=4, warmup=500, draws=500, seed=rep, progress_bar=False
            )
            t0 = time.perf_counter()
            dt = sample(task, spec, cfg)
            wall = time.perf_counter() - t0
            rep_ = summarize(dt)
            tab = rep_.table
            f_rows = tab[[i.startswith("f[") for i in tab.index]]
            st = predictor_statistics(dt)
            row = dict(
                seed=rep,
                wall_s=wall,
                max_rhat=float(tab["r_hat"].max()),
                min_ess_bulk_f=float(f_rows["ess_bulk"].min()),
                min_ess_bulk_all=float(tab["ess_bulk"].min()),
                max_rhat_f=float(f_rows["r_hat"].max()),
                divergences=rep_.divergences,
                accuracy=st["accuracy"],
                mean_steps=float(dt["sample_stats"].ds["n_steps"].mean()),
            )
            rows[name].append(row)
            print(name, json.dumps(row), flush=True)
    med = {k: statistics.median(r["wall_s"] for r in v) for k, v in rows.items()}
    out = dict(
        task="markov-4",
        P=100,
        width=args.width,
        T=0.01,
        chains=4,
        warmup=500,
        draws=500,
        median_wall_s=med,
        runs=rows,
        ratio_full_over_collapsed=med["full"] / med["collapsed"] if len(med) == 2 else None,
    )
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(
        "median wall: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in med.items())
        + (f", ratio full/collapsed {out['ratio_full_over_collapsed']:.2f}" if len(med) == 2 else "")
    )


if __name__ == "__main__":
    main()
