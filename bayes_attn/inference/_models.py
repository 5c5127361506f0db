"""NumPyro models of the attention-path network (docs/theory.md §3, §5.1).

Both models are non-centred: the sampled sites are standard normals ``z_*`` and the
weights are ``sigma * z``.  With isotropic Gaussian priors this is the same posterior
and it keeps the geometry of every block on the same scale when variances differ.

* :func:`full_model` samples every weight (``V^(0)``, every value matrix, the readout);
  the likelihood is ``y ~ N(f(x), T)``.
* :func:`collapsed_model` integrates ``V^(0)`` out exactly: ``y ~ N(0, K_{U_1(W)} + T I)``
  (theory.md §5.1), written with an explicit float64 Cholesky in ``numpyro.factor``.

:func:`build` returns the model together with the derived-quantity function that the
samplers store per draw (symmetry-invariant quantities only, theory.md §3, §7).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from .._errors import InputError
from ..network import (
    NetworkSpec,
    effective_weights,
    forward_paths,
    gaussian_log_marginal,
    gp_posterior,
    gram,
    kernel_fn,
    renormalized_kernel_diag,
)
from ..tasks import Task


def weight_shapes(spec: NetworkSpec, collapsed: bool) -> dict[str, tuple[int, ...]]:
    """Shapes of the standard-normal sites: ``z_V0``, ``z_V1..z_VL``, ``z_a``."""
    N = spec.widths  # (N_1, ..., N_L, N_a)
    shapes = {} if collapsed else {"z_V0": (N[0], spec.n0)}
    for l, H in enumerate(spec.heads):
        shapes[f"z_V{l + 1}"] = (H, N[l + 1], N[l])
    shapes["z_a"] = (N[-1],)
    return shapes


def weights_from_latent(spec: NetworkSpec, z: dict):
    """Scale standard-normal sites to weights: ``(V0 or None, [V1..VL], a)``."""
    s = np.sqrt(spec.variances)
    V0 = s[0] * z["z_V0"] if "z_V0" in z else None
    values = [s[l + 1] * z[f"z_V{l + 1}"] for l in range(spec.n_layers)]
    return V0, values, s[-1] * z["z_a"]


def _sample_latent(spec: NetworkSpec, collapsed: bool) -> dict:
    return {name: numpyro.sample(name, dist.Normal(0.0, 1.0).expand(shape).to_event(len(shape)))
            for name, shape in weight_shapes(spec, collapsed).items()}


@dataclass(frozen=True)
class ModelData:
    """Arrays a model closes over (all float64, derived once from a task)."""

    xpi_train: jnp.ndarray
    xpi_test: jnp.ndarray
    phi_train: jnp.ndarray
    phi_test: jnp.ndarray
    y: jnp.ndarray

    @classmethod
    def from_task(cls, task: Task, spec: NetworkSpec) -> "ModelData":
        spec.check_inputs(task.n0, task.heads)
        return cls(task.path_inputs("train", spec.readout), task.path_inputs("test", spec.readout),
                   task.phi("train", spec), task.phi("test", spec), jnp.asarray(task.y_train))


def full_model(spec: NetworkSpec, data: ModelData):
    """Every weight sampled; ``y ~ N(f(x), T)`` (theory.md §3)."""
    V0, values, a = weights_from_latent(spec, _sample_latent(spec, collapsed=False))
    f = forward_paths(data.xpi_train, V0, effective_weights(values, a))
    numpyro.sample("y", dist.Normal(f, jnp.sqrt(spec.temperature)), obs=data.y)


def collapsed_model(spec: NetworkSpec, data: ModelData, k_train: Callable):
    """``V^(0)`` integrated out: ``y ~ N(0, K_{U_1(W)} + T I)`` (theory.md §5.1)."""
    _, values, a = weights_from_latent(spec, _sample_latent(spec, collapsed=True))
    U = gram(effective_weights(values, a))
    numpyro.factor("y", gaussian_log_marginal(k_train(U), data.y, spec.temperature))


@dataclass(frozen=True)
class BuiltModel:
    """A model, its data and the per-draw derived quantities (``derived(z) -> dict``).

    ``log_density``: the model's log-density as a function of its sites, where the builder has
    one in closed form (the Wishart chain; used by ``sampler.init = "theory"``), else ``None``."""

    model: Callable
    derived: Callable
    data: ModelData
    spec: NetworkSpec
    collapsed: bool
    log_density: Callable | None = None


def build(task: Task, spec: NetworkSpec, collapsed: bool, fixed: dict | None = None) -> BuiltModel:
    """Model + derived quantities.

    ``fixed`` optionally holds values of standard-normal sites (names of
    :func:`weight_shapes`) that are held fixed (conditioned on) instead of sampled: with
    every site but ``z_a`` fixed, the full model is Bayesian linear regression.

    Stored per draw: ``U`` (paths x paths, ``W_eff W_eff^T / N_1``) and, on every test input,
    ``f``: the network output for the full model, the Rao–Blackwellised conditional mean
    ``m_W(x*)`` for the collapsed model, which also stores ``f_var`` = ``v_W(x*)``
    (theory.md §5.1).
    """
    data = ModelData.from_task(task, spec)
    if collapsed:
        k_train = kernel_fn(data.phi_train, data.phi_train)
        k_cross = kernel_fn(data.phi_train, data.phi_test)

        def model():
            collapsed_model(spec, data, k_train)

        def derived(z):
            _, values, a = weights_from_latent(spec, z)
            U = gram(effective_weights(values, a))
            mean, var = gp_posterior(k_train(U), k_cross(U), renormalized_kernel_diag(data.phi_test, U),
                                     data.y, spec.temperature)
            return {"f": mean, "f_var": var, "U": U}
    else:
        def model():
            full_model(spec, data)

        def derived(z):
            V0, values, a = weights_from_latent(spec, z)
            w_eff = effective_weights(values, a)
            return {"f": forward_paths(data.xpi_test, V0, w_eff), "U": gram(w_eff)}

    if fixed:
        shapes = weight_shapes(spec, collapsed)
        fixed = {k: jnp.asarray(v) for k, v in fixed.items()}
        for k, v in fixed.items():
            if k not in shapes or tuple(v.shape) != shapes[k]:
                raise InputError(f"fixed.{k}: not a site of this model or wrong shape {tuple(v.shape)}")
        model = numpyro.handlers.condition(model, data=fixed)
        free_derived = derived

        def derived(z):
            return free_derived({**fixed, **z})

    return BuiltModel(model, derived, data, spec, collapsed)


__all__ = ["full_model", "collapsed_model", "build", "BuiltModel", "ModelData", "weight_shapes",
           "weights_from_latent"]
