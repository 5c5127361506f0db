"""``bayes-attn compare THEORY.nc RUN.nc [RUN.nc ...] --out DIR`` or ``bayes-attn compare SWEEP_DIR --out DIR``:
theory vs sampled networks.

Matches each run to the theory at the same widths and temperature (a sweep: each cell to its own
theory file) and writes ``DIR/compare.txt`` (table), ``DIR/compare.json`` (rows) and PNG plots.
"""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare sampled runs with the theory (table + PNG plots)")
    p.add_argument("theory", help="file written by `bayes-attn theory`, or a folder written by `bayes-attn sweep`")
    p.add_argument("runs", nargs="*", help="run files written by `bayes-attn sample` (none for a sweep folder)")
    p.add_argument("--out", required=True, help="output folder")
    p.set_defaults(func=run)


def _read_theory(path):
    from ..theory import read_theory

    return read_theory(path, required=("U", "predictor_mean", "accuracy", "widths", "y_test"))


def run(args) -> int:
    import json
    from pathlib import Path

    from .._errors import InputError
    from ..diagnostics import compare_plots, format_table, run_gaps
    from ..diagnostics._plots import save_png
    from ..diagnostics._sweep import cell_paths, is_sweep_dir, read_sweep, sweep_figures
    from ..inference import read_run

    out = Path(args.out)
    if is_sweep_dir(args.theory):
        if args.runs:
            raise InputError("runs: a sweep folder brings its own runs; give no run files")
        ds = read_sweep(args.theory)
        rows = [run_gaps(_read_theory(th), read_run(run), name=str(run)) for _, run, th in cell_paths(args.theory, ds)]
        out.mkdir(parents=True, exist_ok=True)
        paths = [save_png(fig, out / name) for name, fig in sweep_figures(ds).items()]
    else:
        if not args.runs:
            raise InputError("runs: give at least one run file (or a sweep folder instead of the theory file)")
        theory = _read_theory(args.theory)
        rows = [run_gaps(theory, read_run(r), name=str(r)) for r in args.runs]
        out.mkdir(parents=True, exist_ok=True)
        paths = compare_plots(theory, rows, out)
    table = format_table(rows)
    (out / "compare.txt").write_text(table + "\n")
    (out / "compare.json").write_text(
        json.dumps([{k: v for k, v in r.items() if not k.startswith("_")} for r in rows], indent=2)
    )
    print(table)
    print(f"wrote {out / 'compare.txt'}, {out / 'compare.json'}, " + ", ".join(p.name for p in paths))
    if not all(r["theory_ok"] for r in rows):
        print("warning: some matched theory entries did not converge (see the theory file's status)")
    failed = [r["run"] for r in rows if not r["converged"]]
    if failed:
        print(f"warning: {len(failed)} run(s) FAIL their convergence gates (bayes-attn diagnose): {', '.join(failed)}")
    sys.stdout.flush()
    return 0
