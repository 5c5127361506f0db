"""NUTS with NumPyro's own functional pieces (``numpyro.infer.hmc.hmc``), chunkable and resumable.

:func:`init` and :func:`build_kernel` wrap NumPyro's ``init_kernel`` / ``sample_kernel``; the
state is NumPyro's :data:`~numpyro.infer.hmc.HMCState` (position, gradient, energy, the whole
warm-up adaptation state: step size, dual-averaging and Welford states, mass matrix, window, and
the chain's RNG key), so a checkpoint of it resumes a run exactly, in warm-up as well.  Chains
start as NumPyro's ``NUTS.init`` starts them (``init_to_uniform``, keys split the same way), so
the draws are those of ``numpyro.infer.MCMC(..., chain_method="vectorized", jit_model_args=True)``
with the same seed, up to floating-point reassociation (docs/samplers.md).

Stats: ``acceptance_rate`` = mean Metropolis acceptance over the tree; ``n_steps`` = leapfrog
steps; ``tree_depth = floor(log2 n_steps) + 1``; ``energy`` = Hamiltonian; ``lp`` = ``-potential``.
"""

from __future__ import annotations

import functools
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from numpyro.infer import init_to_uniform
from numpyro.infer.hmc import HMCState, hmc
from numpyro.infer.util import ParamInfo, find_valid_initial_params, potential_energy

from ._base import Program, Settings

State = HMCState


class Info(NamedTuple):
    """Per-transition statistics read off the new :data:`State`."""

    acceptance_rate: jnp.ndarray
    is_divergent: jnp.ndarray
    num_steps: jnp.ndarray
    energy: jnp.ndarray


@functools.lru_cache(maxsize=None)
def _kernels(model, settings: Settings):
    """NumPyro's ``(init_kernel, sample_kernel)`` for ``model``, built once per (model, settings).

    The potential is NumPyro's ``potential_energy`` of the model at the traced model arguments,
    so the same pair (and its compiled programs) serves every run with the same shapes.
    """
    gen = lambda args: partial(potential_energy, model.numpyro_model, (args,), {})  # noqa: E731
    return hmc(potential_fn_gen=gen, algo="NUTS")


def _dense_structure(model, args, settings: Settings) -> list:
    return [tuple(sorted(model.free_sites(args)))] if settings.dense_mass else []


def init(rng_key, model, args, settings: Settings, position=None, inverse_mass_matrix=None) -> State:
    """NumPyro ``NUTS.init`` for one chain: ``position`` (sites) or ``init_to_uniform``, then ``init_kernel``."""
    rng_key, key_init = jax.random.split(rng_key)
    if position is None:
        position = uniform_start(key_init, model, args)
    return _call_init_kernel(model, settings, position, args, inverse_mass_matrix, rng_key)


def uniform_start(key, model, args) -> ParamInfo:
    """NumPyro's ``init_to_uniform`` start of one chain: ``ParamInfo(sites, potential, gradient)``."""
    proto = {k: jnp.zeros(s) for k, s in model.free_sites(args).items()}
    (z, pe, grad), _ = find_valid_initial_params(
        key, model.numpyro_model, init_strategy=init_to_uniform(), model_args=(args,), prototype_params=proto
    )
    return ParamInfo(z, pe, grad)


def trace_abstractly(fn, *trees) -> None:
    """Trace ``fn`` on the shapes and dtypes of ``trees``, computing nothing: NumPyro's ``sample_kernel`` reads
    settings (tree depth, warm-up adapter) that only its ``init_kernel`` sets, and a process whose start program
    was read from disk (:mod:`bayes_attn._programs`) never ran ``init_kernel``; running it abstractly with a
    state's shapes sets them (they do not depend on the values)."""
    like = lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x))  # noqa: E731
    jax.eval_shape(fn, *(jax.tree.map(like, t) for t in trees))


def init_options(model, args, settings: Settings, inverse_mass_matrix) -> dict:
    """NumPyro ``init_kernel``'s settings of a run: everything but the position, the model arguments and the key
    (shared with the tempered replicas of :mod:`.tempering`)."""
    return dict(
        num_warmup=settings.warmup,
        step_size=1.0,
        inverse_mass_matrix=inverse_mass_matrix,
        adapt_step_size=True,
        adapt_mass_matrix=not settings.fixed_metric,
        dense_mass=_dense_structure(model, args, settings),
        target_accept_prob=settings.target_accept,
        max_tree_depth=settings.max_tree_depth,
    )


def _call_init_kernel(model, settings: Settings, position, args, inverse_mass_matrix, rng_key) -> State:
    init_kernel, _ = _kernels(model, settings)
    options = init_options(model, args, settings, inverse_mass_matrix)
    return init_kernel(position, **options, model_args=(args,), rng_key=rng_key)


def build_kernel(model, settings: Settings):
    """``kernel(state, args) -> (state, info)``: one NUTS transition (adapting while ``state.i < warmup``)."""
    _, sample_kernel = _kernels(model, settings)

    def kernel(state: State, args):
        trace_abstractly(
            lambda p, a, k: _call_init_kernel(model, settings, p, a, None, k),
            ParamInfo(state.z, state.potential_energy, state.z_grad),
            args,
            state.rng_key,
        )
        new = sample_kernel(state, model_args=(args,))
        return new, Info(new.accept_prob, new.diverging, new.num_steps, new.energy)

    return kernel


def program(model, settings: Settings) -> Program:
    """NUTS as a driver program (its RNG key lives in the state; the runner's keys are not used)."""
    kernel = build_kernel(model, settings)

    def init_fn(key, args, position=None, inverse_mass_matrix=None):
        return init(key, model, args, settings, position, inverse_mass_matrix)

    def sample_step(key, state, args):
        state, info = kernel(state, args)
        n = info.num_steps.astype(jnp.int64)
        stats = {
            "lp": -state.potential_energy,
            "acceptance_rate": info.acceptance_rate,
            "step_size": state.adapt_state.step_size,
            "diverging": info.is_divergent,
            "n_steps": n,
            "tree_depth": jnp.floor(jnp.log2(jnp.maximum(n, 1))).astype(jnp.int64) + 1,
            "energy": info.energy,
        }
        return state, stats

    return Program(init_fn, sample_step, lambda k, s, a: s, lambda s, a: s.z, {"diverging": "any", "n_steps": "sum"})


__all__ = ["State", "Info", "init", "init_options", "uniform_start", "trace_abstractly", "build_kernel", "program"]
