"""``bayes-attn sample CONFIG.toml --out RUN.nc``: sample a posterior, write a DataTree."""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("sample", help="sample the posterior of a network (NetCDF DataTree out)")
    p.add_argument("config", help="TOML run config ([data], [network], [sampler])")
    p.add_argument("--out", required=True, help="output .nc file")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--quiet", action="store_true", help="do not print the diagnostics summary")
    p.set_defaults(func=run)


def run(args) -> int:
    from ._config import load_config

    cfg = load_config(args.config)
    # parallel chains need the host devices before any JAX computation
    from ..inference import request_host_devices

    request_host_devices(cfg.sampler.chains)
    from dataclasses import replace

    from ..diagnostics import Thresholds, format_report, summarize
    from ..inference import sample, write_run

    task = cfg.task()
    spec = cfg.spec(task)
    sampler = replace(cfg.sampler, progress_bar=cfg.sampler.progress_bar and not args.no_progress)
    dt = sample(task, spec, sampler, config_text=cfg.text)
    write_run(dt, args.out)
    print(f"wrote {args.out} ({dt.attrs['wall_time_s']:.1f} s sampling)")
    if not args.quiet:
        print(format_report(summarize(dt, Thresholds(**cfg.diagnostics))))
    sys.stdout.flush()
    return 0
