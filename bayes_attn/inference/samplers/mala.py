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

from ._adapt import dual_averaging, flat_logdensity, top_curvature
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


class LangevinCarry(NamedTuple):
    """A Langevin chain: blackjax's state, the dual-averaging state, the step size fixed at the end of warm-up,
    and ``tuning`` (true until then: the step size is the dual-averaged one and the adaptation is updated)."""

    state: NamedTuple  # blackjax MALAState
    adaptation: NamedTuple  # blackjax DualAveragingAdaptationState
    step_size: jnp.ndarray
    tuning: jnp.ndarray


def langevin_functions(model, settings: Settings, target: float, kernel, divergent):
    """Shared Langevin warm-up and sampling: dual averaging of ``log h`` to ``target`` while the carry is tuning,
    started from a standard-normal draw of the flat sites with ``h0 = settings.step_size`` or ``1 / lambda_max``
    there; then the step size that ``end_warmup`` fixed.  ``kernel(key, state, logdensity, h, tuning) -> (state,
    info)``; ``divergent(info, tuning)`` flags a failed step.  Returns ``(init_fn, step)``, ``step(key, carry,
    args) -> (carry, stats)``: one program for both phases, which the carry's flag tells apart, so that the
    kernel is compiled once (docs/design.md, "Profile and floor")."""
    da_init, da_update, _ = dual_averaging(target)

    def init_fn(key, args, position=None, inverse_mass_matrix=None):
        logd, unravel, dim = flat_logdensity(model, args)
        k_x, k_c = jax.random.split(key)
        x0 = jax.random.normal(k_x, (dim,)) if position is None else ravel_pytree(position)[0]
        h0 = (
            settings.step_size
            if settings.step_size is not None
            else 1.0 / top_curvature(logd, x0, k_c, iters=START_CURVATURE_ITERATIONS)
        )
        h0 = jnp.asarray(h0, x0.dtype)
        return LangevinCarry(init(x0, logd), da_init(h0), h0, jnp.asarray(True))

    def step(key, carry, args):
        logd = flat_logdensity(model, args)[0]
        tuning = carry.tuning
        h = jnp.where(tuning, jnp.exp(carry.adaptation.log_step_size), carry.step_size)
        state, info = kernel(key, carry.state, logd, h, tuning)
        adapted = da_update(carry.adaptation, info.acceptance_rate)
        adaptation = jax.tree.map(lambda new, old: jnp.where(tuning, new, old), adapted, carry.adaptation)
        stats = {
            "lp": state.logdensity,
            "acceptance_rate": info.acceptance_rate,
            "step_size": h,
            "diverging": divergent(info, tuning),
            "n_steps": jnp.asarray(1, jnp.int64),
        }
        return carry._replace(state=state, adaptation=adaptation), stats

    return init_fn, step


#: Hessian-vector products for the starting step size ``1 / lambda_max`` (the dense Hessian for a model of at most
#: this many coordinates, else a power iteration of this many steps: :func:`._adapt.top_curvature`)
START_CURVATURE_ITERATIONS = 30


def langevin_program(model, settings: Settings, warmup_target: float, kernel, end_warmup, divergent) -> Program:
    """A Langevin sampler as a driver program (:func:`langevin_functions`): ``end_warmup(key, carry, args)`` fixes
    the step size, and the carry stops tuning."""
    init_fn, step = langevin_functions(model, settings, warmup_target, kernel, divergent)

    def end(key, carry, args):
        return end_warmup(key, carry, args)._replace(tuning=jnp.zeros_like(carry.tuning))

    def position(carry, args):
        return flat_logdensity(model, args)[1](carry.state.position)

    return Program(init_fn, step, end, position, {"diverging": "any", "n_steps": "sum"})


def program(model, settings: Settings) -> Program:
    """MALA as a driver program (step size frozen after warm-up at the dual-averaged value)."""
    _, _, da_final = dual_averaging(settings.target_accept)

    def end_warmup(key, carry, args):
        return carry._replace(step_size=da_final(carry.adaptation))

    kernel = build_kernel()
    return langevin_program(
        model,
        settings,
        settings.target_accept,
        lambda key, state, logd, h, tuning: kernel(key, state, logd, h),
        end_warmup,
        lambda info, tuning: is_divergent(info),
    )


__all__ = [
    "State",  # noqa: F822  (State, Info: module __getattr__, blackjax loads on first use)
    "Info",  # noqa: F822
    "init",
    "build_kernel",
    "is_divergent",
    "langevin_functions",
    "langevin_program",
    "program",
    "DEFAULT_WARMUP_TARGET",
]
