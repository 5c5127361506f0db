"""Where factored attention starts matters: objective and contact precision of a protein fit every SEG
L-BFGS iterations from the equal-entries start (``fa_init``, N(0, 0.1^2) for both factors) or the balanced
start (``fa_balanced_start``, docs/potts_proteins.md §4).  All sequences of one family, the protein defaults
otherwise; one JSON line per segment on stdout (each segment restarts L-BFGS from the previous parameters).

    taskset -c 1 python benchmarks/potts_proteins/start.py rhomboid --start equal --heads 128 --seg 100 --total 500
    taskset -c 1 python benchmarks/potts_proteins/start.py rhomboid --start balanced --heads 128 --seg 100 --total 200

``start.jsonl`` holds the lines of those two runs (one core each).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from bayes_attn import families  # noqa: E402
from bayes_attn import potts as pt  # noqa: E402
from heads import precision  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family")
    ap.add_argument("--start", choices=("equal", "balanced"), default="balanced")
    ap.add_argument("--heads", type=int, default=pt.PROTEIN_HEADS)
    ap.add_argument("--memory", type=int, default=10)
    ap.add_argument("--seg", type=int, default=100)
    ap.add_argument("--total", type=int, default=500)
    args = ap.parse_args(argv)
    fam = {f["name"]: f for f in json.loads((HERE / "data" / "families.json").read_text())["families"]}[args.family]
    aln = families.read_alignment(HERE / "data" / fam["alignment"], focus=fam["focus"])
    w = families.sequence_weights(aln.sequences, families.THETA)
    st = replace(
        pt.protein_settings("factored", aln.L, float(w.sum()), heads=args.heads),
        memory=args.memory,
        max_iter=args.seg,
        balanced_start=False,
    )
    init = None
    if args.start == "balanced":
        cfg = pt.FAConfig(aln.L, aln.C, heads=args.heads, bias=True)
        init = jax.tree.map(np.asarray, pt.fa_balanced_start(jax.random.PRNGKey(1), cfg))
    t0, done = time.time(), 0
    while done < args.total:
        r = pt.fit_scan(jax.random.PRNGKey(0), aln.sequences, aln.sequences[:0], aln.C, st, weights=w, init=init)
        init = jax.tree.map(np.asarray, r.params)
        st = replace(st, profile_fields=False)
        done += args.seg
        print(
            json.dumps(
                {
                    "family": args.family,
                    "start": args.start,
                    "H": args.heads,
                    "memory": args.memory,
                    "its": done,
                    "loss": r.best["fit"]["loss"],
                    "s": round(time.time() - t0),
                    "prec": precision(r.params, aln, fam),
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
