"""What is sampled (``[model] kind``): weights, the collapsed weights, the order parameters, or the attention
with the order parameters (queries and keys sampled, :mod:`._attention`).

:func:`build_model` turns a task and a network spec into a static :class:`Model` (hashable: a
static argument of compiled samplers) and traced :class:`ModelArgs`.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..._errors import InputError
from ...config import ATTENTION_MODELS, check_attention_options
from ...network import NetworkSpec, path_kernels, training_kernels
from ...theory import check_widths
from ._attention import (
    N_MAPS,
    AttentionInputs,
    AttentionModel,
    AttentionWeightsModel,
    attention_inputs,
    attention_dimension,
    prior_positions,
)
from ._base import Model, ModelArgs, SampledModel
from ._order_parameters import OrderParameterModel, TheoryStart, theory_start
from ._weights import CollapsedModel, WeightsModel, weight_shapes, weights_from_latent


def build_model(
    task,
    spec: NetworkSpec,
    kind: str,
    *,
    fixed: dict | None = None,
    data: bool = True,
    path_inputs: bool = False,
    rank: int | None = None,
    basis=None,
    attention_scale: float | None = None,
    limit: str = "finite",
    path_space: str = "auto",
):
    """``(model, args)`` for ``kind`` in ``"weights" | "collapsed" | "order_parameters" | "attention" |
    "attention_weights"``.

    ``fixed``: values of standard-normal weight sites held fixed (conditioned on) instead of
    sampled; with every site but ``z_a`` fixed the full model is Bayesian linear regression.
    ``data = False`` (order parameters only): the prior chain alone.  ``path_inputs``: also pass
    the path-propagated inputs ``x^pi`` (always for ``"weights"``; the Gibbs sweep needs them on
    ``"collapsed"`` too).  ``rank``, ``basis`` (an ``(n0, m)`` array), ``attention_scale`` (``None``: the
    default of :func:`~._attention.default_attention_scale`) and ``limit``: the options of ``"attention"`` and
    ``"attention_weights"``, checked as a config's are (:func:`bayes_attn.config.check_attention_options`: left
    unset on the other kinds) and then against the data.
    ``path_space`` (``"auto" | "dense" | "path"``): the models whose data enter only through the kernel
    (``"order_parameters"``, and ``"collapsed"`` without ``path_inputs``) see the training set as its
    ``r = N0 n_pi`` path-space points when they are fewer than the inputs (docs/theory.md §4.10,
    :func:`bayes_attn.linalg.use_path_space`); ``args.y`` then holds the path-space labels and the
    densities, gradients and stored predictions are the same numbers at a cost independent of ``P``.
    """
    check_attention_options(kind, rank=rank, basis=basis, attention_scale=attention_scale, limit=limit)
    spec.check_inputs(task.n0, task.heads)
    if kind in ATTENTION_MODELS:
        m = attention_dimension(task, rank, basis)
        if kind == "attention" and limit == "finite":
            check_widths(spec)
        inputs, _ = attention_inputs(task, basis, attention_scale)
        common = dict(
            rank=int(rank), m=m, readout=spec.readout, limit=limit, n_maps=min(N_MAPS, task.x_test.shape[0]), data=data
        )
        model = (
            AttentionModel(spec.heads, **common)
            if kind == "attention"
            else AttentionWeightsModel(spec.heads, **common, n0=spec.n0, widths=tuple(spec.widths))
        )
        return model, ModelArgs(spec.hyper(), None, jnp.asarray(task.y_train), inputs=inputs)
    phi_train, phi_test = task.phi("train", spec), task.phi("test", spec)
    if kind == "order_parameters" or (kind == "collapsed" and not path_inputs):
        kernels, y = training_kernels(phi_train, phi_test, task.y_train, mode=path_space)
    else:
        kernels, y = path_kernels(phi_train, phi_test), jnp.asarray(task.y_train)
    if kind == "order_parameters":
        check_widths(spec)
        model = OrderParameterModel(spec.heads, data=data)
        return model, ModelArgs(spec.hyper(), kernels, y)
    cls = WeightsModel if kind == "weights" else CollapsedModel
    model = cls(spec.heads, n0=spec.n0, widths=spec.widths)
    if fixed:
        shapes = model.site_shapes()
        fixed = {k: jnp.asarray(v) for k, v in fixed.items()}
        for k, v in fixed.items():
            if k not in shapes or tuple(v.shape) != shapes[k]:
                raise InputError(f"fixed.{k}: not a site of this model or wrong shape {tuple(v.shape)}")
    xpi = (
        (task.path_inputs("train", spec.readout), task.path_inputs("test", spec.readout))
        if kind == "weights" or path_inputs
        else (None, None)
    )
    return model, ModelArgs(spec.hyper(), kernels, y, *xpi, fixed=fixed or None)


__all__ = [
    "SampledModel",
    "Model",
    "ModelArgs",
    "WeightsModel",
    "CollapsedModel",
    "OrderParameterModel",
    "AttentionModel",
    "AttentionWeightsModel",
    "AttentionInputs",
    "prior_positions",
    "TheoryStart",
    "build_model",
    "theory_start",
    "weight_shapes",
    "weights_from_latent",
]
