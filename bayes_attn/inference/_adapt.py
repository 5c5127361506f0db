"""Step-size tools shared by the Langevin samplers (docs/samplers.md).

* :func:`max_curvature`: largest eigenvalue of the Hessian of the potential ``-log p`` at a
  point, by power iteration on Hessian-vector products (forward-over-reverse autodiff).
  It sets the scale of every step size: Euler–Maruyama on a Gaussian is stable only for
  ``h < 2 / lambda_max``.
* Dual averaging of ``log h`` towards a target acceptance (Nesterov 2009; Hoffman & Gelman
  2014, Algorithm 5, the rule NumPyro and Stan use), written as pure ``init/update/final``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


def max_curvature(logdensity_fn, x, rng_key, iters: int = 30):
    """``|lambda|_max`` of ``-Hessian(log p)(x)`` for a flat ``x``, by power iteration."""
    grad = jax.grad(logdensity_fn)

    def hvp(v):
        return -jax.jvp(grad, (x,), (v,))[1]

    def body(_, v):
        w = hvp(v)
        return w / jnp.linalg.norm(w)

    v0 = jax.random.normal(rng_key, x.shape, x.dtype)
    v = jax.lax.fori_loop(0, iters, body, v0 / jnp.linalg.norm(v0))
    return jnp.abs(v @ hvp(v))


class DualAveragingState(NamedTuple):
    """Dual-averaging state: current ``log h``, its running average, the gradient
    average ``h_bar``, the iteration count and the shrinkage centre ``mu``."""

    log_step: jnp.ndarray
    log_step_avg: jnp.ndarray
    grad_avg: jnp.ndarray
    count: jnp.ndarray
    mu: jnp.ndarray


def dual_averaging_init(step_size) -> DualAveragingState:
    log_h = jnp.log(step_size)
    z = jnp.zeros_like(log_h)
    return DualAveragingState(log_h, log_h, z, z, jnp.log(10.0) + log_h)


def dual_averaging_update(state: DualAveragingState, accept_prob, target: float, *, gamma=0.05, t0=10.0,
                          kappa=0.75) -> DualAveragingState:
    """One update with the acceptance probability of the last step (NaN counts as 0)."""
    accept_prob = jnp.where(jnp.isfinite(accept_prob), accept_prob, 0.0)
    t = state.count + 1.0
    g = (1.0 - 1.0 / (t + t0)) * state.grad_avg + (target - accept_prob) / (t + t0)
    log_h = state.mu - jnp.sqrt(t) / gamma * g
    eta = t ** (-kappa)
    log_avg = eta * log_h + (1.0 - eta) * state.log_step_avg
    return DualAveragingState(log_h, log_avg, g, t, state.mu)


def dual_averaging_final(state: DualAveragingState):
    """The step size used after warm-up: ``exp`` of the averaged ``log h``."""
    return jnp.exp(state.log_step_avg)


__all__ = ["max_curvature", "DualAveragingState", "dual_averaging_init", "dual_averaging_update",
           "dual_averaging_final"]


def std_normal(rng_key, shape, dtype=jnp.float64):
    """Standard normal draws generated in float32 and cast to ``dtype``.

    Half the cost of float64 generation on CPU (where bit generation dominates a Gibbs sweep
    at ``N = 1000``: ``~4 10^6`` normals per sweep); the 24-bit resolution is irrelevant for
    Monte Carlo.  (project choice, docs/samplers.md)
    """
    return jax.random.normal(rng_key, shape, jnp.float32).astype(dtype)


__all__ += ["std_normal"]
