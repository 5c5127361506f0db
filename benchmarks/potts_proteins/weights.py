"""Time of the sequence reweighting (``bayes_attn.families.sequence_weights``, O(M^2 L) on the device in
blocks) on alignment-sized inputs: random sequences over 21 states (the time does not depend on the
letters), first call (compilation included) and a second call.  Writes ``weights.json``.

    python benchmarks/potts_proteins/weights.py --M 10000 100000 --L 160 [--out benchmarks/potts_proteins/weights.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

import bayes_attn  # noqa: F401  (float64)
from bayes_attn.families import sequence_weights

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--M", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--L", type=int, nargs="+", default=[160])
    ap.add_argument("--second", action="store_true", help="also time a second call (skipped for M > 20000)")
    ap.add_argument("--out", default=str(HERE / "weights.json"))
    a = ap.parse_args()
    rows = []
    for L in a.L:
        for M in a.M:
            s = np.random.default_rng(0).integers(0, 21, size=(M, L))
            t0 = time.perf_counter()
            w = sequence_weights(s)
            first = time.perf_counter() - t0
            again = None
            if a.second and M <= 20_000:
                t0 = time.perf_counter()
                sequence_weights(s)
                again = time.perf_counter() - t0
            rows.append({"M": M, "L": L, "first_s": first, "second_s": again, "M_eff": float(w.sum())})
            print(json.dumps(rows[-1]), flush=True)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    tmp = Path(a.out).with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"rows": rows, "cores": cores}, indent=1))
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
