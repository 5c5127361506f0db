"""Replica-exchange NUTS (parallel tempering over the likelihood), chunkable and resumable.

A chain is ``K = replicas`` NUTS chains of the tempered densities (docs/samplers.md, "Tempering")::

    log p_beta(z) = log prior(z) + beta * log lik(z),      1 = beta_0 > beta_1 > ... > beta_{K-1} = beta_min

followed, at every iteration, by swaps of the states of neighbouring replicas ``(k, k+1)``: the even pairs at even
iterations and the odd pairs at odd ones (the deterministic even-odd scheme of Syed et al. 2022, which makes a
state travel along the ladder instead of diffusing), each accepted with probability::

    min(1, exp((beta_k - beta_{k+1}) (log lik(z_{k+1}) - log lik(z_k))))

(the prior cancels), which leaves the product of the tempered densities invariant; replica 0 samples the posterior
and is what the run stores.  The hot replicas cross the barriers between modes that a single chain at ``beta = 1``
cannot, so modes are weighed by their mass instead of by where a chain started (docs/attention.md: the
sampled-attention posterior in the GP limit).

The ladder starts geometric, ``beta_k = beta_min^(k / (K - 1))``.  Halfway through warm-up it is moved once so that
every neighbouring pair rejects equally often (Syed et al. 2022, Algorithm 4): the cumulative rejection rate
``Lambda`` along the ladder is interpolated piecewise linearly in ``log beta`` and the new ladder cuts it into
equal parts, with both ends kept.  Each replica adapts its own step size and mass matrix in warm-up (NumPyro's
NUTS adaptation, as :mod:`.nuts`); the second half of warm-up adapts them to the moved ladder.

``log lik`` is the model's log density minus that of the same model without data (``model.data = False``:
:mod:`bayes_attn.inference.models`), so the sampler serves the models that can drop their data (the order
parameters and the sampled attention).

Stats (replica 0's, at the stored state): ``lp``, ``acceptance_rate``, ``step_size``, ``diverging``,
``tree_depth``, ``energy`` as NUTS's; ``n_steps``: gradient evaluations of the model's density by every replica
(leapfrog steps; an exchange adds one gradient of the prior alone per replica, not counted); ``swap_rate``: mean
acceptance probability of the swaps proposed at the iteration; ``pair_swap_rate``: the acceptance probability of a
swap between each neighbouring pair at the iteration, proposed or not (averaged over draws: each pair's swap rate,
the Rao-Blackwellised estimate of Syed et al. 2022); ``round_trips``: the round trips the chain's states have
completed so far (a state that reached the hottest rung and then the coldest:
:func:`bayes_attn._exchange.round_trip_count`, which the Potts sampler shares); ``ladder``: the betas, rung by rung
(moved once, halfway through warm-up).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from numpyro.infer.hmc import HMCState, hmc
from numpyro.infer.util import ParamInfo

from ..._exchange import round_trip_count, swap_permutation
from ._base import Program, Settings
from .nuts import init_options, trace_abstractly, uniform_start

#: fewest warm-up iterations before the ladder is moved (fewer: the geometric ladder is kept)
MIN_LADDER_WARMUP = 20


class Carry(NamedTuple):
    """A tempered chain: the replicas' NUTS states (leading replica axis; replica ``k`` at ``betas[k]``), the
    ladder, the summed rejection probabilities and the number of proposed swaps of each neighbouring pair since the
    ladder was last set, the iterations done, and the round trips' book-keeping (``_exchange.round_trip_count``):
    which starting replica's state each rung holds, the end of the ladder each state last visited, the trips so
    far."""

    states: HMCState
    betas: jnp.ndarray  # (K,)
    rejections: jnp.ndarray  # (K - 1,)
    proposals: jnp.ndarray  # (K - 1,)
    t: jnp.ndarray
    labels: jnp.ndarray  # (K,) int32: rung -> the starting replica whose state it holds
    last_end: jnp.ndarray  # (K,) int8, by label: 1 hottest rung, 0 coldest, -1 neither yet
    round_trips: jnp.ndarray  # () int64


def _prior_model(model):
    return dataclasses.replace(model, data=False)


def tempered_potential(model, z: dict, args, beta):
    """``-(log prior(z) + beta log lik(z))``: the potential replica ``beta`` samples (both terms from one pass of the
    model, :meth:`~bayes_attn.inference.models.Model.log_prior_and_likelihood`)."""
    prior, lik = model.log_prior_and_likelihood(z, args)
    return -(prior + beta * lik)


def geometric_ladder(replicas: int, beta_min: float) -> jnp.ndarray:
    """``beta_k = beta_min^(k / (K - 1))``, ``k = 0 .. K - 1``: the starting ladder."""
    return jnp.asarray(beta_min) ** (jnp.arange(replicas) / (replicas - 1))


def equal_rejection_ladder(betas, rejection):
    """The ladder on which every neighbouring pair rejects equally often (Syed et al. 2022, Algorithm 4).

    ``rejection[k]``: the estimated rejection probability of swaps between ``betas[k]`` and ``betas[k + 1]``.  The
    cumulative rejection ``Lambda`` (0 at ``beta = 1``) is interpolated piecewise linearly in ``log beta`` and cut
    into ``K - 1`` equal parts *(project choice: log beta, in which the geometric start ladder is uniform)*; both
    ends stay.  A pair that never rejected counts a tiny rate, so ``Lambda`` increases strictly."""
    lam = jnp.concatenate([jnp.zeros(1, betas.dtype), jnp.cumsum(rejection + 1e-6)])
    targets = jnp.linspace(0.0, lam[-1], betas.shape[0])
    new = jnp.exp(jnp.interp(targets, lam, jnp.log(betas)))
    return new.at[0].set(betas[0]).at[-1].set(betas[-1])


def swap(key, betas, log_lik, parity):
    """One round of even-odd swaps: ``(perm, probability, proposed)``.  Pairs ``(k, k + 1)`` with ``k % 2 ==
    parity`` are proposed; replica ``i`` takes the state of replica ``perm[i]``."""
    K = betas.shape[0]
    k = jnp.arange(K - 1)
    proposed = k % 2 == parity
    log_ratio = (betas[:-1] - betas[1:]) * (log_lik[1:] - log_lik[:-1])
    prob = jnp.where(jnp.isnan(log_ratio), 0.0, jnp.exp(jnp.minimum(log_ratio, 0.0)))
    accept = proposed & (jax.random.uniform(key, (K - 1,), prob.dtype) < prob)
    return swap_permutation(accept), prob, proposed


@functools.lru_cache(maxsize=None)
def _kernels(model, settings: Settings):
    """NumPyro's ``(init_kernel, sample_kernel)`` for the tempered potential, its model arguments ``(args, beta)``."""
    return hmc(potential_fn_gen=lambda args, beta: lambda z: tempered_potential(model, z, args, beta), algo="NUTS")


def _init_replica(model, settings: Settings, position: dict, args, beta, inverse_mass_matrix, rng_key) -> HMCState:
    init_kernel, _ = _kernels(model, settings)
    pe, grad = jax.value_and_grad(lambda z: tempered_potential(model, z, args, beta))(position)
    options = init_options(model, args, settings, inverse_mass_matrix)
    return init_kernel(ParamInfo(position, pe, grad), **options, model_args=(args, beta), rng_key=rng_key)


def _map_replicas(fn, xs):
    """``fn`` over the replicas (leading axis of ``xs``): one after another on a CPU, where vectorized NUTS trees
    wait for the longest of them and compile slower (as the chains, docs/design.md "Chains on CPU"), vectorized
    elsewhere *(project choice)*."""
    if jax.default_backend() == "cpu":
        return jax.lax.map(fn, xs)
    return jax.vmap(fn)(xs)


def init(rng_key, model, args, settings: Settings, position=None, inverse_mass_matrix=None) -> Carry:
    """Every replica at ``position`` (or NumPyro's ``init_to_uniform`` draw, as :func:`.nuts.init`), on the
    geometric ladder, with its own NUTS adaptation state and key."""
    rng_key, key_init = jax.random.split(rng_key)
    if position is None:
        position = uniform_start(key_init, model, args).z
    betas = geometric_ladder(settings.replicas, settings.beta_min).astype(jax.tree.leaves(position)[0].dtype)
    keys = jax.random.split(rng_key, settings.replicas)
    states = _map_replicas(
        lambda bk: _init_replica(model, settings, position, args, bk[0], inverse_mass_matrix, bk[1]), (betas, keys)
    )
    zeros = jnp.zeros(settings.replicas - 1, betas.dtype)
    K = settings.replicas
    return Carry(
        states,
        betas,
        zeros,
        zeros,
        jnp.asarray(0, jnp.int64),
        jnp.arange(K, dtype=jnp.int32),
        jnp.full(K, -1, jnp.int8),
        jnp.asarray(0, jnp.int64),
    )


def build_kernel(model, settings: Settings):
    """``kernel(key, carry, args) -> (carry, stats)``: a NUTS transition of every replica, then a round of swaps
    (and, at iteration ``warmup // 2``, the equal-rejection ladder)."""
    _, sample_kernel = _kernels(model, settings)
    ladder_at = settings.warmup // 2 if settings.warmup // 2 >= MIN_LADDER_WARMUP else -1

    def kernel(key, carry: Carry, args):
        one = jax.tree.map(lambda x: x[0], carry.states)
        trace_abstractly(  # as .nuts.build_kernel does
            lambda z, a, b, k: _init_replica(model, settings, z, a, b, None, k),
            one.z,
            args,
            carry.betas[0],
            one.rng_key,
        )
        states = _map_replicas(lambda sb: sample_kernel(sb[0], model_args=(args, sb[1])), (carry.states, carry.betas))

        b = carry.betas
        prior, g_prior = _map_replicas(lambda z: _prior_value_and_grad(model, z, args), states.z)
        lik = (-states.potential_energy - prior) / b  # a replica's potential is -(prior + beta lik)
        perm, prob, proposed = swap(key, b, lik, carry.t % 2)
        rejections = carry.rejections + jnp.where(proposed, 1.0 - prob, 0.0)
        proposals = carry.proposals + proposed
        t = carry.t + 1
        move = t == ladder_at
        betas = jnp.where(move, equal_rejection_ladder(b, rejections / jnp.maximum(proposals, 1)), b)
        # replica k now holds the state of replica perm[k], at its rung's beta (moved with the ladder, if it moved):
        # a state that changed rung or beta gets the potential and gradient of its new one, since NUTS starts its
        # next trajectory from those it keeps
        take = lambda x: x[perm]  # noqa: E731
        pe_from, energy_from = take(states.potential_energy), take(states.energy)
        grad_from = jax.tree.map(take, states.z_grad)
        pe, grad = exchanged_potential(betas, take(b), pe_from, grad_from, take(prior), jax.tree.map(take, g_prior))
        changed = (perm != jnp.arange(b.shape[0])) | move
        pe = jnp.where(changed, pe, pe_from)
        states = states._replace(
            z=jax.tree.map(take, states.z),
            potential_energy=pe,
            z_grad=jax.tree.map(lambda new, old: jnp.where(_rows(changed, new), new, old), grad, grad_from),
            energy=energy_from - pe_from + pe,
        )
        labels = carry.labels[perm]
        last_end, trips = round_trip_count(labels, carry.last_end, carry.round_trips)
        carry = Carry(
            states,
            betas,
            jnp.where(move, 0.0, rejections),
            jnp.where(move, 0.0, proposals),
            t,
            labels,
            last_end,
            trips,
        )
        n = states.num_steps.astype(jnp.int64)
        stats = {
            "lp": -pe[0],
            "acceptance_rate": states.accept_prob[0],
            "step_size": states.adapt_state.step_size[0],
            "diverging": states.diverging[0],
            "n_steps": jnp.sum(n),
            "tree_depth": jnp.floor(jnp.log2(jnp.maximum(n[0], 1))).astype(jnp.int64) + 1,
            "energy": states.energy[0],
            "swap_rate": jnp.sum(jnp.where(proposed, prob, 0.0)) / jnp.maximum(jnp.sum(proposed), 1),
            "pair_swap_rate": prob,
            "round_trips": trips,
            "ladder": betas,
        }
        return carry, stats

    return kernel


def _prior_value_and_grad(model, z, args):
    """``(log prior(z), grad log prior(z))``."""
    return jax.value_and_grad(lambda x: _prior_model(model).log_prior_and_likelihood(x, args)[0])(z)


def _rows(v, like):
    """``v`` (one value per replica) shaped to broadcast against ``like`` (replicas first)."""
    return v.reshape((-1,) + (1,) * (like.ndim - 1))


def exchanged_potential(betas, betas_from, pe_from, grad_from, prior, g_prior):
    """Potentials and gradients of states at a new beta (an exchanged state, or a rung the ladder moved), from their
    own.  A state at ``beta_j`` has potential ``pe_j = -(prior + beta_j lik)``; at ``beta_k`` it is::

        -prior + (beta_k / beta_j) (pe_j + prior),      and the same for the gradient,

    so an exchange needs only the prior's value and gradient, not a second gradient of the likelihood, and rounding
    is amplified by at most the ratio of neighbouring rungs.  Every argument is per receiving replica ``k``:
    ``betas_from``, ``pe_from``, ``grad_from``, ``prior``, ``g_prior`` are those of the state it receives."""
    ratio = betas / betas_from
    pe = -prior + ratio * (pe_from + prior)
    grad = jax.tree.map(lambda g, gp: -gp + _rows(ratio, g) * (g + gp), grad_from, g_prior)
    return pe, grad


def program(model, settings: Settings) -> Program:
    """Replica-exchange NUTS as a driver program: the position is replica 0's (``beta = 1``)."""
    kernel = build_kernel(model, settings)

    def init_fn(key, args, position=None, inverse_mass_matrix=None):
        return init(key, model, args, settings, position, inverse_mass_matrix)

    return Program(
        init_fn,
        kernel,
        lambda k, c, a: c,
        lambda c, a: jax.tree.map(lambda x: x[0], c.states.z),
        {"diverging": "any", "n_steps": "sum"},
    )


__all__ = [
    "Carry",
    "MIN_LADDER_WARMUP",
    "build_kernel",
    "equal_rejection_ladder",
    "exchanged_potential",
    "geometric_ladder",
    "init",
    "program",
    "swap",
    "tempered_potential",
]
