"""One entry point for every model and sampler: :func:`sample` -> ArviZ DataTree.

``sample`` builds the model (:func:`~bayes_attn.inference.models.build_model`), the start
(``init = "theory"``: :func:`~bayes_attn.inference.models.theory_start`) and runs the sampler's
program through the chunked runner (:mod:`._runner`), which checkpoints and resumes every kind.
"""

from __future__ import annotations

import time

import numpy as np

from .._cpus import borrowed_cpu
from .._io import read_matrix
from ..network import NetworkSpec, path_labels
from ._checkpoint import fingerprint
from ..config import ATTENTION_MODELS, SamplerConfig
from ._output import to_datatree
from ._runner import run_chains
from .models import build_model, prior_positions, theory_start
from .samplers import SAMPLERS, Settings


def sample(
    task,
    spec: NetworkSpec,
    cfg: SamplerConfig,
    *,
    config_text: str | None = None,
    checkpoint=None,
    resume: bool = False,
    stop_after_chunks: int | None = None,
    fixed: dict | None = None,
    data: bool = True,
    attrs: dict | None = None,
    timings: dict | None = None,
    basis=None,
):
    """Sample the posterior of ``spec`` on ``task`` and return an ArviZ DataTree.

    ``cfg.model`` says what is sampled (weights, collapsed weights, order parameters) and
    ``cfg.kind`` with which algorithm.  ``checkpoint``: a file written after every chunk;
    ``resume``: continue from it (the same draws as an uninterrupted run with the same config
    and seed; a checkpoint of another config is an :class:`~bayes_attn.InputError`).
    ``fixed``: weight sites held fixed (:func:`~bayes_attn.inference.models.build_model`);
    ``data = False``: the prior alone (order parameters); ``attrs``: extra root attributes; ``timings``: a
    dict to which the wall time of each phase of the run is added (:func:`~bayes_attn.inference.run_chains`).
    ``basis``: the ``(n0, m)`` basis of ``model = "attention"`` (``None``: read from ``cfg.basis`` when that
    names a file, else the token space itself).
    """
    if basis is None and cfg.basis is not None:
        basis = read_matrix(cfg.basis, field="model.basis")
    with borrowed_cpu():  # building the model compiles its programs: on an idle core besides the claimed one
        model, args, positions, imm, fp = _build(task, spec, cfg, fixed, data, basis)
    settings = Settings.from_config(cfg, fixed_metric=imm is not None)
    t0 = time.perf_counter()
    groups = run_chains(
        cfg.kind,
        model,
        args,
        cfg,
        settings,
        fp=fp,
        positions=positions,
        inverse_mass_matrix=imm,
        checkpoint=checkpoint,
        resume=resume,
        stop_after_chunks=stop_after_chunks,
        timings=timings,
    )
    wall = time.perf_counter() - t0
    root = {
        "sampler": cfg.kind,
        "model": cfg.model,
        "collapsed": int(cfg.model == "collapsed"),
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
        "precision": cfg.precision,
        **(attrs or {}),
    }
    if cfg.model in ATTENTION_MODELS:
        root.update(
            rank=cfg.rank, limit=cfg.limit, attention_scale=float(args.inputs.scale), attention_dimension=model.m
        )
    if config_text is not None:
        root["config"] = config_text
    labels = task.path_labels
    if cfg.model in ATTENTION_MODELS:  # sampled heads are not the task's named heads: "l.h" for head h of layer l
        labels = path_labels([[f"{l}.{h}" for h in range(1, H + 1)] for l, H in enumerate(spec.heads, start=1)])
    return to_datatree(
        groups["posterior"],
        groups["sample_stats"],
        path_labels=labels,
        y_train=task.y_train,
        y_test=task.y_test,
        attrs=root,
        warmup_sample_stats=groups["warmup_sample_stats"],
        warmup_posterior=groups["warmup_posterior"],
    )


def _build(task, spec, cfg, fixed, data, basis):
    """The model, its arguments, the chains' starting points and mass matrix, and the run's fingerprint."""
    model, args = build_model(
        task,
        spec,
        cfg.model,
        fixed=fixed,
        data=data,
        path_inputs=SAMPLERS[cfg.kind].path_inputs,
        rank=cfg.rank,
        basis=basis,
        attention_scale=cfg.attention_scale,
        limit=cfg.limit,
        path_space=cfg.path_space,
    )
    positions = imm = None
    if cfg.init == "prior":
        positions = prior_positions(model, spec, cfg.chains, cfg.seed)
    elif cfg.init == "theory":
        start = theory_start(model, args, spec, cfg.chains, cfg.seed)
        positions, imm = start.positions, start.inverse_mass_matrix
        if imm is not None and not cfg.dense_mass:
            imm = np.diag(imm)
    return model, args, positions, imm, fingerprint(cfg, spec, model, args.data_arrays())


__all__ = ["sample"]
