"""``bayes-attn diagnose RUN.nc [RUN.nc ...]``: R-hat, ESS, MCSE, divergences, BFMI and a verdict per run.

Several runs (a sweep's cells) are read first -- a file that cannot be read is a one-line error before
anything is printed -- and reported one after another under ``== RUN`` headers, in one process."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("diagnose", help="convergence diagnostics of a run (invariant quantities)")
    p.add_argument("run", nargs="+", help="run file(s) written by `bayes-attn sample` (or a sweep's cells)")
    p.add_argument("--rhat-max", type=float, default=1.01, help="R-hat gate (default 1.01)")
    p.add_argument("--ess-bulk-min", type=float, default=400.0, help="bulk ESS gate (default 400)")
    p.add_argument("--ess-tail-min", type=float, default=400.0, help="tail ESS gate (default 400)")
    p.add_argument("--rows", type=int, default=12, help="rows of the worst entries per quantity")
    p.add_argument("--strict", action="store_true", help="exit 1 when a verdict is FAIL")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..diagnostics import Thresholds, format_report, summarize
    from ..inference import read_run

    thresholds = Thresholds(args.rhat_max, args.ess_bulk_min, args.ess_tail_min)
    runs = [(path, read_run(path)) for path in args.run]
    passed = True
    for path, dt in runs:
        rep = summarize(dt, thresholds)
        if len(runs) > 1:
            print(f"== {path}")
        print(format_report(rep, args.rows), flush=True)
        passed &= rep.passed
    return 1 if (args.strict and not passed) else 0
