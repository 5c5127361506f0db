"""Unadjusted Langevin algorithm (ULA), blackjax style.

Euler–Maruyama discretisation of ``dz = grad log p(z) dt + sqrt(2) dB`` (docs/theory.md §3:
the Langevin dynamics at temperature ``T`` of the weights, in the non-centred coordinates
``z = theta / sigma`` and with time measured in units of ``T``)::

    z' = z + h grad log p(z) + sqrt(2 h) xi

No accept/reject: the chain's stationary law is biased by ``O(h)``.  For a Gaussian target
with Hessian eigenvalue ``lambda`` the stationary variance along that eigenvector is
``1 / (lambda (1 - h lambda / 2))`` (exact; docs/samplers.md), so the step-size rule
``h = c / lambda_max`` bounds the relative variance bias of the stiffest direction by
``c / (2 - c)``.  ``info.mh_accept_prob`` reports the Metropolis acceptance the step *would*
have had: a free, local measure of the discretisation error.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from ._mala import MALAState, langevin_step, log_acceptance_ratio
from ._mala import init as _init

ULAState = MALAState


class ULAInfo(NamedTuple):
    """``is_divergent``: the new log density is not finite (the chain has blown up);
    ``mh_accept_prob``: MALA's acceptance probability of this step (diagnostic only)."""

    is_divergent: jnp.ndarray
    mh_accept_prob: jnp.ndarray


def init(position, logdensity_fn) -> ULAState:
    return _init(position, logdensity_fn)


def build_kernel():
    """Return ``kernel(rng_key, state, logdensity_fn, step_size) -> (state, info)``."""

    def kernel(rng_key, state: ULAState, logdensity_fn, step_size):
        new = langevin_step(rng_key, state, logdensity_fn, step_size)
        log_ratio = log_acceptance_ratio(state, new, step_size)
        accept = jnp.where(jnp.isfinite(log_ratio), jnp.exp(jnp.minimum(log_ratio, 0.0)), 0.0)
        return new, ULAInfo(~jnp.isfinite(new.logdensity), accept)

    return kernel


__all__ = ["ULAState", "ULAInfo", "init", "build_kernel"]


def as_program(built, cfg):
    """ULA as a driver program.  Warm-up is MALA with dual averaging (target 0.574), which
    reaches the typical set without the risk of a diverging unadjusted chain; at its end the
    step size is set by the rule ``h = cfg.ula_step_factor / lambda_max`` (Hessian of the
    potential at the chain's position, power iteration) and kept fixed."""
    from ._adapt import max_curvature
    from ._chunked import Program
    from ._mala import DEFAULT_WARMUP_TARGET, flat_logdensity, warmup_program

    logd, unravel, dim = flat_logdensity(built)
    init_fn, warmup_step = warmup_program(logd, dim, cfg, DEFAULT_WARMUP_TARGET)
    kernel = build_kernel()

    def end_warmup(key, carry):
        state, da, _ = carry
        h = cfg.ula_step_factor / max_curvature(logd, state.position, key)
        return state, da, h

    def sample_step(key, carry):
        state, da, h = carry
        state, info = kernel(key, state, logd, h)
        stats = {"diverging": info.is_divergent, "step_size": h, "lp": state.logdensity,
                 "mh_accept_prob": info.mh_accept_prob, "n_grad_evals": jnp.asarray(1)}
        return (state, da, h), stats

    return Program(init_fn, warmup_step, end_warmup, sample_step, lambda c: unravel(c[0].position),
                   {"diverging": "any", "n_grad_evals": "sum"})


def _runner():
    from ._chunked import chunked_runner

    return chunked_runner(as_program, "run_ula")


run_ula = _runner()
__all__ += ["as_program", "run_ula"]
