"""A gradient-trained attention network on the hidden-Markov task, the baseline of docs/attention.md.

The GD network of :mod:`bayes_attn.gd` (learned queries and keys on the bare tokens, the Bayesian network's
architecture: two layers of two heads, width ``N``, the task's readout) trained on the same ``P`` training
sequences as the Bayesian runs (:func:`bayes_attn.gd.train_on_set`: a fifth held out for early stopping,
AdamW, mean squared error to the +-1 labels), for several seeds.  Each run records the network's own test
accuracy on the 1000 test sequences and the theory's accuracy with the trained queries and keys as fixed
attention (saddle point at ``N``, and the GP limit; ``T = 0.1``).  JSON to ``--out``.

    python benchmarks/attention/gd_markov.py --out benchmarks/attention/gd_markov.json
    python benchmarks/attention/gd_markov.py --smoke --out /tmp/g.json     # tiny (tests)
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from run import hand_built_accuracy as theory_accuracy  # noqa: E402  (the theory's accuracy at a task's heads)


def run_one(task, cfg, temperature: float) -> dict:
    from bayes_attn import gd
    from bayes_attn.tasks import Task

    t0 = time.perf_counter()
    res = gd.train_on_set(cfg, task.x_train, task.y_train, val_fraction=0.2)
    wall = time.perf_counter() - t0
    test = gd.accuracy(res.params, task.x_test, task.y_test, cfg.readout)
    fit, _ = gd.holdout_split(task.y_train, 0.2, cfg.seed)
    train = gd.accuracy(res.params, task.x_train[fit], task.y_train[fit], cfg.readout)
    gd_task = Task(task.x_train, task.y_train, task.x_test, task.y_test, gd.export_layers(res.params), name="gd")
    spec = gd_task.spec(width=cfg.width, temperature=temperature, readout=cfg.readout)
    return {
        "seed": cfg.seed,
        "test_accuracy": test,
        "train_accuracy": train,
        "best_val_accuracy": res.best_val_accuracy,
        "best_step": res.best_step,
        "stopped_early": res.stopped_early,
        "train_s": wall,
        "theory_at_gd_attention": theory_accuracy(gd_task, spec, gp=False),
        "gp_at_gd_attention": theory_accuracy(gd_task, spec, gp=True),
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--P", type=int, nargs="+", default=[100, 400])
    ap.add_argument("--width", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--patience", type=int, default=20, help="evaluations (every steps/80) without a better one")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (the test suite)")
    args = ap.parse_args(argv)
    import bayes_attn  # noqa: F401  (x64)
    from bayes_attn import gd
    from bayes_attn.tasks import markov_task

    n_test = 1000
    if args.smoke:
        args.P, args.width, args.seeds, args.steps, n_test = [40], 8, 1, 40, 50
    out = {"machine": platform.machine(), "temperature": 0.1, "runs": []}
    for P in args.P:
        task = markov_task(P=P, n_test=n_test, paths=4)
        readout = task.spec(width=args.width).readout
        for seed in range(args.seeds):
            cfg = gd.GDConfig(
                width=args.width,
                heads=task.heads,
                d_qk=16,
                readout=readout,
                lr=args.lr,
                weight_decay=5e-5,
                batch=32,
                steps=args.steps,
                eval_every=max(args.steps // 80, 1),
                patience=args.patience,
                seed=seed,
            )
            row = {"P": P, "config": asdict(cfg), **run_one(task, cfg, out["temperature"])}
            out["runs"].append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "config"}), flush=True)
            Path(args.out).write_text(json.dumps(out, indent=1))
    Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
