"""Unadjusted Langevin algorithm (ULA): blackjax's Euler–Maruyama step, no accept/reject.

Euler–Maruyama discretisation of ``dz = grad log p(z) dt + sqrt(2) dB`` (docs/theory.md §3: the
Langevin dynamics at temperature ``T`` of the weights, in the sampled coordinates and with time
measured in units of ``T``)::

    z' = z + h grad log p(z) + sqrt(2 h) xi

The step is blackjax's (:func:`blackjax.mcmc.diffusions.overdamped_langevin`, the full-batch SGLD
step).  The chain's stationary law is biased by ``O(h)``: for a Gaussian target with Hessian
eigenvalue ``lambda`` the stationary variance along that eigenvector is
``1 / (lambda (1 - h lambda / 2))`` (exact; docs/samplers.md), so the step-size rule
``h = ula_step_factor / lambda_max`` (``lambda_max``: the largest |eigenvalue| of the potential's
Hessian) bounds the relative variance bias of the stiffest direction by ``c / (2 - c)``.  Warm-up is MALA
with dual averaging (target 0.574), which reaches the typical set without the risk of a diverging unadjusted
chain: the same Euler–Maruyama proposal, accepted with MALA's probability (:func:`build_switching_kernel`, so
that warm-up and sampling share one compiled program); at its end ``h`` is set by the rule (Hessian at the
chain's position: dense for up to :data:`CURVATURE_ITERATIONS` coordinates, else power iteration) and kept
fixed.

Stats: ``acceptance_rate`` = the Metropolis acceptance probability the step *would* have had under
MALA (a free, local measure of the discretisation error; nothing is rejected); ``diverging`` = the
new log density is not finite (the chain has blown up); ``n_steps`` = gradient evaluations.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ._adapt import flat_logdensity, top_curvature
from ._base import Program, Settings  # noqa: F401  (Program: the return type)
from .mala import DEFAULT_WARMUP_TARGET, _blackjax_mala, init, langevin_program


def __getattr__(name):
    if name == "State":
        return _blackjax_mala().MALAState
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: power iterations for ``lambda_max`` at the end of warm-up (one-time cost; 30, enough for MALA's initial
#: step, underestimated lambda_max by 4 % on a small collapsed model, making the ULA step 4 % too large); a model
#: of at most this many coordinates gets the exact value from its dense Hessian instead (:func:`top_curvature`)
CURVATURE_ITERATIONS = 300


class Info(NamedTuple):
    """``is_divergent``: the new log density is not finite; ``acceptance_rate``: MALA's acceptance
    probability of this step (diagnostic only)."""

    is_divergent: jnp.ndarray
    acceptance_rate: jnp.ndarray


def log_acceptance_ratio(state, new, step_size):
    """``log [p(z') q(z | z') / (p(z) q(z' | z))]`` with ``log q(b | a) = -|b - a - h grad log p(a)|^2 / (4 h)``."""

    def log_q(to, frm):
        d = to.position - frm.position - step_size * frm.logdensity_grad
        return -jnp.sum(d * d) / (4.0 * step_size)

    return new.logdensity - state.logdensity + log_q(state, new) - log_q(new, state)


def build_switching_kernel():
    """Return ``kernel(rng_key, state, logdensity_fn, step_size, adjusted) -> (state, info)``: one Euler–Maruyama
    proposal from ``rng_key``, kept (``adjusted`` false: ULA) or accepted with MALA's probability (``adjusted``
    true: the warm-up), one gradient evaluation either way.  ``adjusted`` may be traced: the warm-up and the
    sampling then share one compiled program.  The acceptance uniform is drawn from ``fold_in(rng_key, 1)``."""

    from blackjax.mcmc.diffusions import overdamped_langevin  # first use only (module docstring)

    MALAState = _blackjax_mala().MALAState

    def kernel(rng_key, state, logdensity_fn, step_size, adjusted):
        step = overdamped_langevin(jax.value_and_grad(logdensity_fn))
        new = MALAState(*step(rng_key, state, step_size))
        log_ratio = log_acceptance_ratio(state, new, step_size)
        accept = jnp.where(jnp.isfinite(log_ratio), jnp.exp(jnp.minimum(log_ratio, 0.0)), 0.0)
        u = jax.random.uniform(jax.random.fold_in(rng_key, 1), (), accept.dtype)
        keep = jnp.logical_or(jnp.logical_not(adjusted), u < accept)  # (adjusted may be a Python bool)
        new = jax.tree.map(lambda a, b: jnp.where(keep, a, b), new, state)
        return new, Info(~jnp.isfinite(new.logdensity), accept)

    return kernel


def build_kernel():
    """Return ``kernel(rng_key, state, logdensity_fn, step_size) -> (state, info)``: one ULA step
    (:func:`build_switching_kernel`, unadjusted)."""
    switching = build_switching_kernel()
    return lambda rng_key, state, logdensity_fn, step_size: switching(rng_key, state, logdensity_fn, step_size, False)


def divergent(info, tuning):
    """Warm-up (MALA): the acceptance probability underflows to 0 or is not finite; sampling: the new log density
    is not finite."""
    return jnp.where(tuning, ~(info.acceptance_rate > 0), info.is_divergent)


def program(model, settings: Settings) -> Program:
    """ULA as a driver program (MALA warm-up, then ``h = ula_step_factor / lambda_max``, fixed)."""

    def end_warmup(key, carry, args):
        logd = flat_logdensity(model, args)[0]
        lam = top_curvature(logd, carry.state.position, key, iters=CURVATURE_ITERATIONS)
        return carry._replace(step_size=settings.ula_step_factor / lam)

    return langevin_program(model, settings, DEFAULT_WARMUP_TARGET, build_switching_kernel(), end_warmup, divergent)


__all__ = [
    "State",  # noqa: F822  (State: module __getattr__)
    "Info",
    "init",
    "build_switching_kernel",
    "build_kernel",
    "divergent",
    "log_acceptance_ratio",
    "program",
]
