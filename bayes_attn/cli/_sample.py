"""``bayes-attn sample CONFIG.toml --out RUN.nc [--resume]``: sample a posterior, write a DataTree.

Every run checkpoints to ``RUN.nc.ckpt.npz`` and its parts after each chunk (``[sampler] checkpoint_every``
stored draws; :mod:`bayes_attn.inference._checkpoint`); after a kill, the same command with ``--resume`` continues from it and writes the
draws an uninterrupted run would have written.  ``RUN.nc`` is written atomically, then the
checkpoint is removed.
"""

from __future__ import annotations

import sys
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("sample", help="sample the posterior of a network (NetCDF DataTree out)")
    p.add_argument("config", help="TOML run config ([data], [network], [model], [sampler])")
    p.add_argument("--out", required=True, help="output .nc file")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--quiet", action="store_true", help="do not print the diagnostics summary")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run from OUT.ckpt.npz: the same draws as an uninterrupted run",
    )
    p.set_defaults(func=run, without_dask=True)  # no dask arrays: xarray need not import dask (_io.without_dask)


def checkpoint_path(out) -> Path:
    """Checkpoint of a run written to ``out``: ``OUT.ckpt.npz``."""
    return Path(str(out) + ".ckpt.npz")


def run(args) -> int:
    from ..inference import load_config

    cfg = load_config(args.config)
    # chains sharded over host devices need them before any JAX computation; other runs ask for none, so that
    # they share compiled programs with every other one-device process (host_devices_needed)
    from ..inference import host_devices_needed, request_host_devices

    n_devices = host_devices_needed(cfg.sampler.chains, cfg.sampler.chain_method, cfg.sampler.devices)
    if n_devices is not None:
        request_host_devices(n_devices)
    from .._cpus import prime_compiler

    prime_compiler()  # the devices are chosen: let compilations use a core borrowed while it is idle
    from dataclasses import replace

    from ..diagnostics import format_report, summarize
    from ..inference import remove_checkpoint, sample, write_run

    task = cfg.task()
    spec = cfg.spec(task)
    sampler = replace(cfg.sampler, progress_bar=cfg.sampler.progress_bar and not args.no_progress)
    ckpt = checkpoint_path(args.out)
    if args.resume and not ckpt.is_file():
        print(f"no checkpoint {ckpt}: starting from the beginning")
    try:
        dt = sample(task, spec, sampler, config_text=cfg.text, checkpoint=ckpt, resume=args.resume, basis=cfg.basis())
    except KeyboardInterrupt:
        if ckpt.is_file():
            print(
                f"interrupted; resume with: bayes-attn sample {args.config} --out {args.out} --resume", file=sys.stderr
            )
        raise
    write_run(dt, args.out)
    remove_checkpoint(ckpt)  # with its parts and any temporary file a write cut by a kill left
    print(f"wrote {args.out} ({dt.attrs['wall_time_s']:.1f} s sampling)")
    if not args.quiet:
        print(format_report(summarize(dt, cfg.diagnostics)))
    sys.stdout.flush()
    return 0
