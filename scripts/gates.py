#!/usr/bin/env python
"""Gates of the default runs: run the sweep of ``configs/gates_markov4.toml`` and write
``docs/figures/gates_markov4.json`` (one row per cell: R-hat, ESS, divergences, verdict), the data of the
table ``gates_markov4`` (scripts/tables/gates_markov4.py) in docs/samplers.md.

    .venv/bin/python scripts/gates.py [--out runs/gates] [--workers 2]      # ~15 min on 2 cores

The verdict is ``converged`` of ``sweep.nc``: the one verdict of ``bayes_attn.diagnostics.summarize``
(every gate of ``bayes-attn diagnose``).  Cells already computed with the same config are reused.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "configs" / "gates_markov4.toml"))
    ap.add_argument("--out", default=str(ROOT / "runs" / "gates"))
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--json", default=str(ROOT / "docs" / "figures" / "gates_markov4.json"))
    args = ap.parse_args(argv)
    from bayes_attn._cache import enable_compilation_cache
    from bayes_attn.diagnostics import Thresholds
    from bayes_attn.sweep import load_sweep, run_sweep

    enable_compilation_cache()
    sweep = load_sweep(args.config)
    ds, _ = run_sweep(sweep, args.out, workers=args.workers, progress=True)
    rows = []
    for c in sweep.cells:
        sel = ds.isel({n: i for n, i in zip(sweep.names, c.index)})
        rows.append(
            {
                **{n: v.item() if hasattr(v, "item") else v for n, v in zip(sweep.names, c.values)},
                "status": str(sel["status"].values),
                "error": str(sel["error"].values),
                "max_rhat": float(sel["max_rhat"]),
                "min_ess_bulk": float(sel["min_ess_bulk"]),
                "divergences": int(sel["divergences"]),
                "converged": bool(int(sel["converged"])),
                "wall_s": float(sel["wall_s"]),
            }
        )
    t = Thresholds()
    out = {
        "config": os.path.relpath(args.config, ROOT),
        "writer": "scripts/gates.py",
        "thresholds": {
            "rhat_max": t.rhat_max,
            "ess_bulk_min": t.ess_bulk_min,
            "ess_tail_min": t.ess_tail_min,
            "max_divergences": t.max_divergences,
            "bfmi_min": t.bfmi_min,
        },
        "cells": rows,
    }
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    bad = [r for r in rows if not r["converged"]]
    print(f"{len(rows) - len(bad)}/{len(rows)} cells PASS; wrote {args.json}")
    for r in bad:
        print(
            "FAIL",
            {k: r[k] for k in ("width", "temperature", "seed", "max_rhat", "min_ess_bulk", "divergences", "error")},
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
