"""Metropolis-adjusted Langevin algorithm (MALA): blackjax's kernel, tuned by blackjax's dual averaging.

Proposal (Euler–Maruyama step of ``dz = grad log p dt + sqrt(2) dB``, docs/theory.md §3, in the
sampled coordinates)::

    z' = z + h grad log p(z) + sqrt(2 h) xi,      xi ~ N(0, I)

accepted with probability ``min(1, p(z') q(z | z') / (p(z) q(z' | z)))``.  Exact for any ``h``.
State and kernel are blackjax's (:mod:`blackjax.mcmc.mala`); this module adds the warm-up
(dual averaging of ``log h`` to ``target_accept``, default 0.574, from a standard-normal start and
``h0 = step_size`` or ``1 / lambda_max``) and the divergence flag.

Stats: ``acceptance_rate`` = ``min(1, ratio)``; ``diverging`` = the acceptance probability
underflows to 0 or is not finite (log ratio below about -745: a proposal that blew up);
``n_steps`` = gradient evaluations (1 per iteration).

blackjax is imported on first use, not when this module is imported: ``import blackjax`` runs a
JAX computation (a default argument ``jnp.log(2.0)`` in ``blackjax.adaptation.step_size``), which
would initialise the JAX backend and make ``request_host_devices`` ineffective for anyone who
imported :mod:`bayes_attn.inference` first.  ``State`` and ``Info`` are blackjax's
``MALAState`` / ``MALAInfo`` (module attributes resolved on access).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from ._adapt import dual_averaging, flat_logdensity, max_curvature
from ._base import Program, Settings


def _blackjax_mala():
    from blackjax.mcmc import mala  # first use only (module docstring)

    return mala


def __getattr__(name):
    if name == "State":
        return _blackjax_mala().MALAState
    if name == "Info":
        return _blackjax_mala().MALAInfo
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: acceptance targeted by the Langevin warm-up when none is configured (Roberts & Rosenthal 1998)
DEFAULT_WARMUP_TARGET = 0.574


def init(position, logdensity_fn):
    """blackjax's ``MALAState(position, logdensity, logdensity_grad)``."""
    return _blackjax_mala().init(position, logdensity_fn)


def build_kernel():
    """blackjax's ``kernel(rng_key, state, logdensity_fn, step_size) -> (state, info)``."""
    return _blackjax_mala().build_kernel()


def is_divergent(info):
    """A proposal whose acceptance probability underflows to 0 or is not finite."""
    return ~(info.acceptance_rate > 0)


class WarmupCarry(NamedTuple):
    state: NamedTuple  # blackjax MALAState
    adaptation: NamedTuple  # blackjax DualAveragingAdaptationState
    step_size: jnp.ndarray


def warmup_functions(model, settings: Settings, target: float):
    """Shared Langevin warm-up: MALA with dual averaging of ``log h`` to ``target``, started from a
    standard-normal draw of the flat sites, ``h0 = settings.step_size`` or ``1 / lambda_max`` there.
    ``warmup_step(key, carry, args) -> (carry, stats)``: the MALA statistics at the current step size."""
    kernel = build_kernel()
    da_init, da_update, _ = dual_averaging(target)

    def init_fn(key, args, position=None, inverse_mass_matrix=None):
        logd, unravel, dim = flat_logdensity(model, args)
        k_x, k_c = jax.random.split(key)
        x0 = jax.random.normal(k_x, (dim,)) if position is None else ravel_pytree(position)[0]
        h0 = settings.step_size if settings.step_size is not None else 1.0 / max_curvature(logd, x0, k_c)
        h0 = jnp.asarray(h0, x0.dtype)
        return WarmupCarry(init(x0, logd), da_init(h0), h0)

    def warmup_step(key, carry, args):
        logd = flat_logdensity(model, args)[0]
        h = jnp.exp(carry.adaptation.log_step_size)
        state, info = kernel(key, carry.state, logd, h)
        stats = {
            "lp": state.logdensity,
            "acceptance_rate": info.acceptance_rate,
            "step_size": h,
            "diverging": is_divergent(info),
            "n_steps": jnp.asarray(1, jnp.int64),
        }
        return WarmupCarry(state, da_update(carry.adaptation, info.acceptance_rate), carry.step_size), stats

    return init_fn, warmup_step


def langevin_program(model, settings: Settings, warmup_target: float, kernel, end_warmup, divergent) -> Program:
    """A Langevin sampler as a driver program: the shared warm-up (:func:`warmup_functions`), then
    ``kernel(key, state, logdensity, step_size) -> (state, info)`` at the step size that
    ``end_warmup(key, carry, args)`` fixes; ``divergent(info)`` flags a blown-up step."""
    init_fn, warmup_step = warmup_functions(model, settings, warmup_target)

    def sample_step(key, carry, args):
        state, info = kernel(key, carry.state, flat_logdensity(model, args)[0], carry.step_size)
        stats = {
            "lp": state.logdensity,
            "acceptance_rate": info.acceptance_rate,
            "step_size": carry.step_size,
            "diverging": divergent(info),
            "n_steps": jnp.asarray(1, jnp.int64),
        }
        return carry._replace(state=state), stats

    def position(carry, args):
        return flat_logdensity(model, args)[1](carry.state.position)

    return Program(init_fn, warmup_step, end_warmup, sample_step, position, {"diverging": "any", "n_steps": "sum"})


def program(model, settings: Settings) -> Program:
    """MALA as a driver program (step size frozen after warm-up at the dual-averaged value)."""
    _, _, da_final = dual_averaging(settings.target_accept)

    def end_warmup(key, carry, args):
        return carry._replace(step_size=da_final(carry.adaptation))

    return langevin_program(model, settings, settings.target_accept, build_kernel(), end_warmup, is_divergent)


__all__ = [
    "State",  # noqa: F822  (State, Info: module __getattr__, blackjax loads on first use)
    "Info",  # noqa: F822
    "init",
    "build_kernel",
    "is_divergent",
    "warmup_functions",
    "langevin_program",
    "program",
    "DEFAULT_WARMUP_TARGET",
]
