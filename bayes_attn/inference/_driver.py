"""One entry point for every sampler: :func:`sample` -> ArviZ DataTree.

``RUNNERS[kind](built, cfg) -> (posterior, sample_stats)`` runs a kind; ``BUILDERS[kind]``
(default: the weight-space :func:`build`) makes what it samples.  Runners marked
``runner.chunked`` (MALA, ULA, Gibbs: :mod:`._chunked`) also take ``checkpoint=``,
``resume=`` and ``stop_after_chunks=``; NUTS (NumPyro) runs in one piece.
"""

from __future__ import annotations

import time

from .._errors import InputError
from ..network import NetworkSpec
from ..tasks import Task
from ._config import SamplerConfig
from ._gibbs import run_gibbs
from ._mala import run_mala
from ._models import build
from ._nuts import run_nuts
from ._output import to_datatree
from ._ula import run_ula
from ._wishart import build_wishart, theory_start

#: kind -> runner(built_model, cfg) -> (posterior, sample_stats)
RUNNERS = {"nuts": run_nuts, "mala": run_mala, "ula": run_ula, "gibbs": run_gibbs}
#: kind -> builder(task, spec, collapsed) -> BuiltModel; kinds not listed use the weight-space ``build``
BUILDERS: dict = {}
BUILDERS["wishart"] = build_wishart  # order parameters, theory.md §5.2
RUNNERS["wishart"] = run_nuts


def sample(task: Task, spec: NetworkSpec, cfg: SamplerConfig, *, config_text: str | None = None,
           checkpoint=None, resume: bool = False, stop_after_chunks: int | None = None):
    """Sample the posterior of ``spec`` on ``task`` and return an ArviZ DataTree.

    ``checkpoint``: a file the chunked samplers write after every chunk; ``resume``: continue
    from it (same draws as an uninterrupted run with the same config and seed).
    """
    runner = RUNNERS[cfg.kind]
    chunked = getattr(runner, "chunked", False)
    if resume and not chunked:
        kinds = ", ".join(k for k, r in RUNNERS.items() if getattr(r, "chunked", False))
        raise InputError(f"sampler.kind: resuming needs a chunked sampler ({kinds}), not {cfg.kind!r}")
    built = BUILDERS.get(cfg.kind, build)(task, spec, cfg.collapsed)
    t0 = time.perf_counter()
    if chunked:
        posterior, stats = runner(built, cfg, checkpoint=checkpoint, resume=resume,
                                  stop_after_chunks=stop_after_chunks)
    elif cfg.init == "theory":  # only kind = "wishart" (SamplerConfig)
        start = theory_start(built, cfg.chains, cfg.seed)
        posterior, stats = runner(built, cfg, *start)
    else:
        posterior, stats = runner(built, cfg)
    wall = time.perf_counter() - t0
    attrs = {
        "sampler": cfg.kind,
        "collapsed": int(cfg.collapsed),
        "seed": cfg.seed,
        "chains": cfg.chains,
        "warmup": cfg.warmup,
        "draws": cfg.draws,
        "thinning": cfg.thinning,
        "width": list(spec.widths),
        "temperature": spec.temperature,
        "variances": list(spec.variances),
        "readout": spec.readout,
        "heads": list(spec.heads),
        "task": task.name,
        "task_meta": dict(task.meta),
        "wall_time_s": wall,
        "resumed": int(bool(resume)),
        "init": cfg.init,
    }
    if config_text is not None:
        attrs["config"] = config_text
    return to_datatree(posterior, stats, path_labels=task.path_labels, y_train=task.y_train,
                       y_test=task.y_test, attrs=attrs)
