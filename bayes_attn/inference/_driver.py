"""One entry point for every sampler: :func:`sample` -> ArviZ DataTree."""

from __future__ import annotations

import time

from ..network import NetworkSpec
from ..tasks import Task
from ._config import SamplerConfig
from ._models import build
from ._nuts import run_nuts
from ._output import to_datatree

#: kind -> runner(built_model, cfg) -> (posterior, sample_stats)
RUNNERS = {"nuts": run_nuts}
#: kind -> builder(task, spec, collapsed) -> BuiltModel; kinds not listed use the weight-space ``build``
BUILDERS: dict = {}


def sample(task: Task, spec: NetworkSpec, cfg: SamplerConfig, *, config_text: str | None = None):
    """Sample the posterior of ``spec`` on ``task`` and return an ArviZ DataTree."""
    built = BUILDERS.get(cfg.kind, build)(task, spec, cfg.collapsed)
    t0 = time.perf_counter()
    posterior, stats = RUNNERS[cfg.kind](built, cfg)
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
    }
    if config_text is not None:
        attrs["config"] = config_text
    return to_datatree(posterior, stats, path_labels=task.path_labels, y_train=task.y_train,
                       y_test=task.y_test, attrs=attrs)
