"""Compiling a cell's programs ahead of a sweep, in a process of its own.

A sweep worker's first cell compiles the cell's theory and sampler programs (on the Markov order-parameter cells
of the main job, about 15 s on one core: ``compile_s`` in ``sweep.nc``), and every worker compiles the same ones,
since widths, temperatures and seeds are traced.  A script with other work before its sweep -- the main job
solves the theory over its width x temperature grid first, on one core -- can call :func:`start_compiling` with
the config of a cell before that work: a process on another core compiles the programs into the persistent
compilation cache and the folder of traced programs (docs/design.md, "Compilation cache"), from which the
workers then read them.

*(project choice)* The process compiles by doing a cell's work on a throwaway scale -- the cell's theory scan and
the first chunk of its sampler (``stop_after_chunks = 1``), nothing written -- so that its programs are the
cells' by construction, not a list of programs that could drift from them.  It runs with the workers'
environment (:func:`~bayes_attn.sweep.worker_env`: XLA's flags are part of the cache's key).  Compiling ahead
is an optimisation only: if it fails, the workers compile as they would have.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from .._cache import CompileTimer, enable_compilation_cache
from ._cell import _theory_options
from ._run import worker_env


def compile_cell(raw: dict, base_dir, theory: bool = True) -> float:
    """Compile (and keep in the cache) the programs of a cell with config ``raw`` (paths relative to ``base_dir``):
    its theory scan (unless ``theory`` is false: a caller that solves the theory itself meanwhile, with the same
    XLA flags, compiles those) and its sampler's start and chunk programs, by running the scan and one chunk.
    Returns the seconds spent compiling."""
    from ..config import parse_config
    from ..inference import SamplingInterrupted, sample
    from ..theory import scan

    enable_compilation_cache()
    cfg = parse_config(raw, Path(base_dir))
    task = cfg.task()
    spec = cfg.spec(task)
    with CompileTimer() as ct:
        if theory:
            scan(task, spec, [spec.widths], [spec.temperature], **_theory_options(raw))
        try:
            sample(task, spec, replace(cfg.sampler, progress_bar=False), stop_after_chunks=1, basis=cfg.basis())
        except SamplingInterrupted:
            pass
    return ct.seconds


def start_compiling(raw: dict, base_dir, theory: bool = True) -> subprocess.Popen:
    """Start :func:`compile_cell` of ``raw`` (and ``theory``) in a new process with the sweep workers' environment, on one core (the
    least busy: :func:`bayes_attn._cpus.claim_cpus`); returns the process: ``communicate()`` with it before the
    sweep; its exit status is 0 when it compiled, else its standard error holds a one-line reason."""
    code = "import sys; from bayes_attn.sweep._warm import _main; _main(sys.argv[1], sys.argv[2], sys.argv[3])"
    return subprocess.Popen(
        [sys.executable, "-c", code, json.dumps(raw), str(base_dir), "theory" if theory else "no-theory"],
        env={**os.environ, **worker_env()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _main(raw_json: str, base_dir: str, theory: str) -> None:
    from .._cpus import claim_cpus

    claim_cpus(1)
    try:
        compile_cell(json.loads(raw_json), base_dir, theory=theory == "theory")
    except Exception as exc:  # noqa: BLE001 - an optimisation only: report one line, the sweep compiles anyway
        print(f"compiling ahead failed: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        raise SystemExit(1) from None


__all__ = ["compile_cell", "start_compiling"]
