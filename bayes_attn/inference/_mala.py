"""Metropolis-adjusted Langevin algorithm (MALA), blackjax style.

Proposal (Euler–Maruyama step of the Langevin diffusion ``dz = grad log p dt + sqrt(2) dB``,
docs/theory.md §3, in the non-centred coordinates ``z = theta / sigma``)::

    z' = z + h grad log p(z) + sqrt(2 h) xi,      xi ~ N(0, I)

accepted with probability ``min(1, p(z') q(z | z') / (p(z) q(z' | z)))``,
``log q(z' | z) = -|z' - z - h grad log p(z)|^2 / (4 h)``.  Exact for any ``h``; the
step size is tuned in warm-up (docs/samplers.md).  Positions are flat float arrays (the
driver ravels the model's sites).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

#: a proposal whose log acceptance ratio is below ``-DIVERGENCE`` (or not finite) is divergent
DIVERGENCE = 1000.0
#: acceptance targeted by the Langevin warm-up when none is configured (Roberts & Rosenthal 1998)
DEFAULT_WARMUP_TARGET = 0.574


class MALAState(NamedTuple):
    """Position, log density there and its gradient (reused by the next step)."""

    position: jnp.ndarray
    logdensity: jnp.ndarray
    logdensity_grad: jnp.ndarray


class MALAInfo(NamedTuple):
    """``acceptance_rate``: ``min(1, ratio)``; ``is_accepted``; ``is_divergent``: non-finite
    or very negative log ratio."""

    acceptance_rate: jnp.ndarray
    is_accepted: jnp.ndarray
    is_divergent: jnp.ndarray


def init(position, logdensity_fn) -> MALAState:
    logp, grad = jax.value_and_grad(logdensity_fn)(position)
    return MALAState(position, logp, grad)


def langevin_step(rng_key, state: MALAState, logdensity_fn, step_size) -> MALAState:
    """One Euler–Maruyama step (the ULA update, also the MALA proposal)."""
    from ._adapt import std_normal

    noise = std_normal(rng_key, state.position.shape, state.position.dtype)
    new = state.position + step_size * state.logdensity_grad + jnp.sqrt(2.0 * step_size) * noise
    return init(new, logdensity_fn)


def log_acceptance_ratio(state: MALAState, proposal: MALAState, step_size):
    """``log [p(z') q(z | z') / (p(z) q(z' | z))]``."""

    def log_q(to, frm):
        d = to.position - frm.position - step_size * frm.logdensity_grad
        return -jnp.sum(d * d) / (4.0 * step_size)

    return proposal.logdensity - state.logdensity + log_q(state, proposal) - log_q(proposal, state)


def build_kernel():
    """Return ``kernel(rng_key, state, logdensity_fn, step_size) -> (state, info)``."""

    def kernel(rng_key, state: MALAState, logdensity_fn, step_size):
        key_prop, key_acc = jax.random.split(rng_key)
        proposal = langevin_step(key_prop, state, logdensity_fn, step_size)
        log_ratio = log_acceptance_ratio(state, proposal, step_size)
        ok = jnp.isfinite(log_ratio)
        log_ratio = jnp.where(ok, log_ratio, -jnp.inf)
        accept_prob = jnp.exp(jnp.minimum(log_ratio, 0.0))
        accepted = jnp.log(jax.random.uniform(key_acc, dtype=state.position.dtype)) < log_ratio
        new = jax.tree.map(lambda p, s: jnp.where(accepted, p, s), proposal, state)
        return new, MALAInfo(accept_prob, accepted, ~ok | (log_ratio < -DIVERGENCE))

    return kernel


__all__ = ["MALAState", "MALAInfo", "init", "build_kernel", "langevin_step", "log_acceptance_ratio",
           "DIVERGENCE"]


# ---- driver glue ------------------------------------------------------------------------------

def flat_logdensity(built):
    """``(logdensity(x), unravel, dim)`` of the model's potential on flat unconstrained ``x``."""
    from jax.flatten_util import ravel_pytree
    from numpyro.infer.util import initialize_model

    info = initialize_model(jax.random.PRNGKey(0), built.model)
    flat, unravel = ravel_pytree(info.param_info.z)
    potential = info.potential_fn
    return (lambda x: -potential(unravel(x))), unravel, flat.size


def warmup_program(logdensity_fn, dim, cfg, target_accept):
    """Shared Langevin warm-up: MALA with dual averaging of ``log h`` to ``target_accept``,
    started from a prior draw ``z ~ N(0, I)`` with ``h0 = cfg.step_size`` or ``1 / lambda_max``."""
    from ._adapt import dual_averaging_init, dual_averaging_update, max_curvature

    kernel = build_kernel()

    def init_fn(key):
        k_x, k_c = jax.random.split(key)
        x0 = jax.random.normal(k_x, (dim,))
        h0 = cfg.step_size if cfg.step_size is not None else 1.0 / max_curvature(logdensity_fn, x0, k_c)
        h0 = jnp.asarray(h0, x0.dtype)
        return init(x0, logdensity_fn), dual_averaging_init(h0), h0

    def warmup_step(key, carry):
        state, da, h = carry
        state, info = kernel(key, state, logdensity_fn, jnp.exp(da.log_step))
        return state, dual_averaging_update(da, info.acceptance_rate, target_accept), h

    return init_fn, warmup_step


def as_program(built, cfg):
    """MALA as a driver :class:`~bayes_attn.inference._chunked.Program` (step size fixed after
    warm-up at the dual-averaged value)."""
    from ._adapt import dual_averaging_final
    from ._chunked import Program

    logd, unravel, dim = flat_logdensity(built)
    init_fn, warmup_step = warmup_program(logd, dim, cfg, cfg.target_accept)
    kernel = build_kernel()

    def end_warmup(key, carry):
        state, da, _ = carry
        return state, da, dual_averaging_final(da)

    def sample_step(key, carry):
        state, da, h = carry
        state, info = kernel(key, state, logd, h)
        stats = {"acceptance_rate": info.acceptance_rate, "diverging": info.is_divergent, "step_size": h,
                 "lp": state.logdensity, "n_grad_evals": jnp.asarray(1)}
        return (state, da, h), stats

    return Program(init_fn, warmup_step, end_warmup, sample_step, lambda c: unravel(c[0].position),
                   {"diverging": "any", "n_grad_evals": "sum"})


def _runner():
    from ._chunked import chunked_runner

    return chunked_runner(as_program, "run_mala")


run_mala = _runner()
__all__ += ["flat_logdensity", "as_program", "run_mala"]
