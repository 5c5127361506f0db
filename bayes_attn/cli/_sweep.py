"""``bayes-attn sweep SWEEP.toml --out DIR [--workers N | --scheduler ADDRESS] [--no-progress]``.

SWEEP.toml is a run config plus a ``[sweep]`` table of dotted keys -> lists (bayes_attn.sweep).
Every cell writes ``DIR/cells/<name>.nc`` (a run) and ``<name>.theory.nc``; ``DIR/sweep.nc`` holds
one summary variable per quantity over the sweep axes.  Re-running the same command recomputes
nothing, finishes a killed sweep, or computes only added cells.  Exit 1 when a cell failed (named).
"""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("sweep", help="run a grid of cells (sample + theory each) on Dask; resumable")
    p.add_argument("config", help="TOML run config with a [sweep] table")
    p.add_argument("--out", required=True, help="output folder (cells/ and sweep.nc)")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes of the embedded Dask cluster (default: the number of cores; "
        "0 = run the cells in this process)",
    )
    g.add_argument("--scheduler", help="address of an existing Dask scheduler, e.g. tcp://HOST:8786")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run, cpus_default="all")  # the workers pin themselves, one core each


def run(args) -> int:
    from pathlib import Path

    from .._errors import InputError, renamed
    from ..sweep import load_sweep, run_sweep

    if args.workers is not None and args.workers < 0:
        raise InputError(f"--workers: must be >= 0, got {args.workers}")
    sweep = load_sweep(args.config)
    print(f"{len(sweep.cells)} cells over {', '.join(f'{n} ({len(v)})' for n, v in zip(sweep.names, sweep.values))}")
    with renamed({"scheduler": "--scheduler"}):
        ds, results = run_sweep(
            sweep, Path(args.out), workers=args.workers, scheduler=args.scheduler, progress=not args.no_progress
        )
    counts = {s: sum(r["status"] == s for r in results) for s in ("done", "reused", "failed")}
    print(
        f"wrote {Path(args.out) / 'sweep.nc'}: {counts['done']} computed, {counts['reused']} reused, "
        f"{counts['failed']} failed"
    )
    if "converged" in ds:
        ok = int(ds["converged"].sum())
        print(f"converged (every diagnose gate): {ok} of {len(results) - counts['failed']} cells")
    failed = [r for r in results if r["status"] == "failed"]
    for r in failed:
        print(f"failed: {r['name']}: {r['error']}", file=sys.stderr)
    sys.stdout.flush()
    return 1 if failed else 0
