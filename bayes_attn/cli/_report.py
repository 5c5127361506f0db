"""``bayes-attn report RUN_OR_DIR [--theory THEORY.nc] --out report.html``: one self-contained HTML file."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("report", help="self-contained HTML report of a run or a folder of runs")
    p.add_argument("run", help="run file written by `bayes-attn sample`, or a folder of them")
    p.add_argument("--theory", help="theory file written by `bayes-attn theory` (adds theory-vs-samples plots)")
    p.add_argument("--out", required=True, help="output .html file")
    p.add_argument("--rhat-max", type=float, default=1.01, help="R-hat gate (default 1.01)")
    p.add_argument("--ess-bulk-min", type=float, default=400.0, help="bulk ESS gate (default 400)")
    p.add_argument("--ess-tail-min", type=float, default=400.0, help="tail ESS gate (default 400)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..diagnostics import Thresholds
    from ..diagnostics._report import write_report

    out = write_report(args.run, args.out, args.theory, Thresholds(args.rhat_max, args.ess_bulk_min, args.ess_tail_min))
    print(f"wrote {out}")
    return 0
