"""``bayes-attn compare THEORY.nc RUN.nc [RUN.nc ...] --out DIR``: theory vs sampled networks.

Matches each run to the theory at the same widths and temperature and writes
``DIR/compare.txt`` (table), ``DIR/compare.json`` (rows) and four PNG plots.
"""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare sampled runs with the theory (table + PNG plots)")
    p.add_argument("theory", help="file written by `bayes-attn theory`")
    p.add_argument("runs", nargs="+", help="run files written by `bayes-attn sample`")
    p.add_argument("--out", required=True, help="output folder")
    p.set_defaults(func=run)


def _read_theory(path):
    from ..theory import read_theory

    return read_theory(path, required=("U", "predictor_mean", "accuracy", "widths", "y_test"))


def run(args) -> int:
    import json
    from pathlib import Path

    from ..inference import read_run
    from ..theory._compare import format_table, run_gaps
    from ..theory._plots import compare_plots

    theory = _read_theory(args.theory)
    rows = [run_gaps(theory, read_run(r), name=str(r)) for r in args.runs]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = format_table(rows)
    (out / "compare.txt").write_text(table + "\n")
    (out / "compare.json").write_text(json.dumps([{k: v for k, v in r.items() if not k.startswith("_")}
                                                  for r in rows], indent=2))
    paths = compare_plots(theory, rows, out)
    print(table)
    print(f"wrote {out / 'compare.txt'}, {out / 'compare.json'}, " + ", ".join(p.name for p in paths))
    if not all(r["converged"] for r in rows):
        print("warning: some matched theory entries did not converge (see the theory file's status)")
    sys.stdout.flush()
    return 0
