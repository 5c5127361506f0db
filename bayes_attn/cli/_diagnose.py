"""``bayes-attn diagnose RUN.nc``: R-hat, ESS, MCSE, divergences, BFMI and a verdict."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("diagnose", help="convergence diagnostics of a run (invariant quantities)")
    p.add_argument("run", help="run file written by `bayes-attn sample`")
    p.add_argument("--rhat-max", type=float, default=1.01, help="R-hat gate (default 1.01)")
    p.add_argument("--ess-bulk-min", type=float, default=400.0, help="bulk ESS gate (default 400)")
    p.add_argument("--ess-tail-min", type=float, default=400.0, help="tail ESS gate (default 400)")
    p.add_argument("--rows", type=int, default=12, help="rows of the worst entries per quantity")
    p.add_argument("--strict", action="store_true", help="exit 1 when the verdict is FAIL")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..diagnostics import Thresholds, format_report, summarize
    from ..inference import read_run

    dt = read_run(args.run)
    rep = summarize(dt, Thresholds(args.rhat_max, args.ess_bulk_min, args.ess_tail_min))
    print(format_report(rep, args.rows))
    return 1 if (args.strict and not rep.passed) else 0
