"""Replica exchange's book-keeping, shared by the two parallel-tempering samplers of the package (the Potts model's,
:func:`bayes_attn.potts.parallel_tempering`, and replica-exchange NUTS, :mod:`bayes_attn.inference.samplers.tempering`):
the permutation that a round of neighbour swaps makes, and the round trips of the states along the ladder
(docs/samplers.md, "Tempering"; docs/potts.md §2.1).  Pure JAX on one system; a sampler of several maps them over
its systems.  The samplers differ in how they propose and accept (their ladders run in opposite directions, their
states are configurations or NUTS states), not in these two steps.
"""

from __future__ import annotations

import jax.numpy as jnp


def swap_permutation(accept):
    """``perm`` (``K``,) after the accepted swaps ``accept`` (``K - 1``,) of neighbouring rungs ``(k, k + 1)``: rung
    ``i`` takes the state of rung ``perm[i]``.  Accepted pairs must not overlap (the even or the odd pairs of one
    round), so ``perm`` is a product of disjoint transpositions."""
    idx = jnp.arange(accept.shape[0] + 1)
    up = jnp.concatenate([accept, jnp.zeros(1, bool)])  # rung i takes i + 1's state
    down = jnp.concatenate([jnp.zeros(1, bool), accept])  # rung i takes i - 1's state
    return jnp.where(up, idx + 1, jnp.where(down, idx - 1, idx))


def round_trip_count(labels, last_end, trips):
    """``(last_end, trips)`` once the states sit at the rungs ``labels`` (rung -> the label of the state it holds):
    a state that arrives at rung 0 having last visited rung ``K - 1`` (not rung 0 again since) completes a round
    trip (Syed et al. 2022).  ``last_end`` (by label): 1 rung ``K - 1``, 0 rung 0, -1 neither yet; ``trips``: the
    count so far.  Round trips measure what a ladder is for: states that carry what one end explores to the
    other."""
    bot, top = labels[0], labels[-1]
    trips = trips + (last_end[bot] == 1).astype(trips.dtype)
    return last_end.at[top].set(1).at[bot].set(0), trips


__all__ = ["round_trip_count", "swap_permutation"]
