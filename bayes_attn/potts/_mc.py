"""Monte Carlo for the generalized Potts model, vectorised over chains (potts.md §2.1).

One algorithm family, functional core in the blackjax style: a state of ``R`` rungs x ``M``
chains, ``s`` (R, M, L) int32; a sweep visits the sites ``i = 0..L-1`` in order with either

* heat-bath (Gibbs): ``s_i ~ softmax(beta_r (sum_j J_ij U[:, s_j] + h_i))``;
* Metropolis: propose ``a'`` uniform among the other C-1 colours, accept with
  ``min(1, exp(-beta_r dH))``;
* greedy (zero temperature): ``s_i <- argmax`` of the local field (ground-state guesses).

Parallel tempering: after each sweep of every rung, swap attempts between neighbours
``(k, k+1)`` (even pairs on even sweeps, odd pairs on odd sweeps), accepted with
``min(1, exp[(beta_k - beta_{k+1})(H_k - H_{k+1})])``.  Plain independent chains are R = 1.
The MC runs in float32 / int32 (project choice, for speed); energies are recomputed from
scratch every sweep, so there is no drift.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import one_of, positive, require
from .._exchange import round_trip_count, swap_permutation
from ._model import energy

#: single-site updates of a sweep (``method``): a heat-bath draw from the conditional, a Metropolis step to a
#: uniformly chosen other colour, or the colour of the largest local field (greedy)
METHODS = ("heat_bath", "metropolis", "greedy")


class PTState(NamedTuple):
    """The state of ``M`` parallel-tempering systems of ``R`` rungs: configurations, the replica label at each
    rung and the round-trip counters (:func:`init_state`, :func:`run_blocks`)."""

    s: jax.Array  # (R, M, L) int32 configurations, by rung
    label: jax.Array  # (R, M) int32 replica label at each rung (for round trips)
    last_end: jax.Array  # (R_labels, M) int8: -1 none, 0 bottom rung, 1 top rung last visited
    trips: jax.Array  # (M,) int32 completed bottom->top->bottom round trips


class PTInfo(NamedTuple):
    """What one block of :func:`run_blocks` records: energies and configurations of every rung, and the
    neighbour-swap acceptance and attempts."""

    energy: jax.Array  # (R, M) energies after the block
    snapshot: jax.Array  # (R, M, L) configurations of every rung
    swap_acc: jax.Array  # (R-1,) mean swap acceptance over the block's attempts
    swap_n: jax.Array  # (R-1,) number of attempts in the block (per chain)


def _site_field(s, Ji, U):
    """sum_j J_ij U[:, s_j] for every system: weighted colour histogram (scatter-add) times U.

    O(R M L) scatter + O(R M C^2) matmul instead of O(R M L C) (U symmetric)."""
    R, M, L = s.shape
    C = U.shape[0]
    flat = s.reshape(R * M, L)
    rows = jnp.broadcast_to(jnp.arange(R * M)[:, None], (R * M, L))
    n = jnp.zeros((R * M, C), U.dtype).at[rows, flat].add(jnp.broadcast_to(Ji, (R * M, L)))
    return (n @ U).reshape(R, M, C)


def _site_update(i, carry, *, J, U, h, betas, method, u1, u2):
    s = carry
    field = _site_field(s, J[i], U) + h[i]  # (R, M, C)
    si = s[..., i]
    if method == "heat_bath":  # inverse-CDF draw from softmax
        logits = betas[:, None, None] * field
        w = jnp.cumsum(jnp.exp(logits - logits.max(-1, keepdims=True)), -1)
        new = jnp.sum(w < u1[..., i, None] * w[..., -1:], -1)
        new = jnp.minimum(new, U.shape[0] - 1)
    elif method == "greedy":
        new = jnp.argmax(field, axis=-1)
    else:  # metropolis
        C = U.shape[0]
        prop = (si + 1 + jnp.floor(u1[..., i] * (C - 1)).astype(si.dtype).clip(0, C - 2)) % C
        f_new = jnp.take_along_axis(field, prop[..., None], -1)[..., 0]
        f_old = jnp.take_along_axis(field, si[..., None], -1)[..., 0]
        dH = -(f_new - f_old)
        acc = jnp.log(u2[..., i]) < -betas[:, None] * dH
        new = jnp.where(acc, prop, si)
    return s.at[..., i].set(new.astype(s.dtype))


def sweep(key, s, J, U, h, betas, method: str = "heat_bath"):
    """One sweep over all sites of ``s`` (R, M, L) at inverse temperatures ``betas`` (R,)."""
    k1, k2 = jax.random.split(key)
    u1 = jax.random.uniform(k1, s.shape, U.dtype)
    u2 = jax.random.uniform(k2, s.shape, U.dtype, minval=1e-30) if method == "metropolis" else u1
    upd = partial(_site_update, J=J, U=U, h=h, betas=betas, method=method, u1=u1, u2=u2)
    return jax.lax.fori_loop(0, s.shape[-1], upd, s)


def _swap(key, state: PTState, E, betas, parity):
    R, M = E.shape
    k = jnp.arange(R - 1)
    active = (k % 2) == parity  # (R-1,)
    log_a = (betas[:-1] - betas[1:])[:, None] * (E[:-1] - E[1:])  # (R-1, M)
    acc = (jnp.log(jax.random.uniform(key, log_a.shape)) < log_a) & active[:, None]
    perm = jax.vmap(swap_permutation, in_axes=1, out_axes=1)(acc)  # (R, M): rung k takes rung perm[k]'s state
    s = jnp.take_along_axis(state.s, perm[..., None], 0)
    label = jnp.take_along_axis(state.label, perm, 0)
    E = jnp.take_along_axis(E, perm, 0)
    # round trips: a label arriving at the bottom rung (the hottest) after having visited the top
    last_end, trips = jax.vmap(round_trip_count, in_axes=(1, 1, 0), out_axes=(1, 0))(label, state.last_end, state.trips)
    return PTState(s, label, last_end, trips), E, jnp.where(active[:, None], acc, False), active


def init_state(s0) -> PTState:
    """The parallel-tempering state that starts from the configurations ``s0`` (R, M, L): replica ``r`` at rung
    ``r``, no rung visited yet, no round trips."""
    s0 = jnp.asarray(s0, jnp.int32)
    R, M, _ = s0.shape
    label = jnp.broadcast_to(jnp.arange(R, dtype=jnp.int32)[:, None], (R, M))
    last_end = jnp.full((R, M), -1, jnp.int8)
    return PTState(s0, label, last_end, jnp.zeros((M,), jnp.int32))


@partial(jax.jit, static_argnames=("n_blocks", "thin", "method", "swaps"))
def run_blocks(
    key, state: PTState, J, U, h, betas, *, n_blocks: int, thin: int, method: str = "heat_bath", swaps: bool = True
):
    """``n_blocks`` blocks of ``thin`` sweeps (+ PT swaps); records every rung after each block."""
    J = jnp.asarray(J, jnp.float32)
    U = jnp.asarray(U, jnp.float32)
    h = jnp.asarray(h, jnp.float32)
    betas = jnp.asarray(betas, jnp.float32)
    R = betas.shape[0]

    def one_sweep(t, carry):
        st, key, acc_sum, n_att = carry
        key, k1, k2 = jax.random.split(key, 3)
        s = sweep(k1, st.s, J, U, h, betas, method)
        st = st._replace(s=s)
        if swaps and R > 1:
            E = energy(s, J, U, h)
            st, _, acc, active = _swap(k2, st, E, betas, t % 2)
            acc_sum = acc_sum + acc.mean(1)
            n_att = n_att + active
        return st, key, acc_sum, n_att

    def block(carry, _):
        st, key, t0 = carry
        zeros = jnp.zeros((max(R - 1, 1),), jnp.float32)
        st, key, acc_sum, n_att = jax.lax.fori_loop(
            0, thin, lambda t, c: one_sweep(t0 + t, c), (st, key, zeros[: R - 1], zeros[: R - 1])
        )
        E = energy(st.s, J, U, h)
        info = PTInfo(E, st.s, acc_sum / jnp.maximum(n_att, 1), n_att)
        return (st, key, t0 + thin), info

    (state, _, _), info = jax.lax.scan(block, (state, key, 0), None, length=n_blocks)
    return state, info


class MCResult(NamedTuple):
    """Output of :func:`sample_chains` / :func:`parallel_tempering` (numpy arrays)."""

    samples: np.ndarray  # (n_keep * M, L) configurations of the recorded rung after burn-in
    snapshots: np.ndarray  # (n_blocks, R, M, L) snapshots of every rung
    energy: np.ndarray  # (n_blocks, R, M) energies per block
    swap_acc: np.ndarray  # (R-1,) neighbour swap acceptance over the post-burn-in blocks
    round_trips: np.ndarray  # (M,) completed round trips per PT system
    betas: np.ndarray  # (R,)
    state: PTState


def _validate(J, U, h, M, n_blocks, thin, burn_blocks, method):
    J = np.asarray(J, float)
    U = np.asarray(U, float)
    positive(M, "chains", integer=True)
    positive(n_blocks, "n_blocks", integer=True)
    positive(thin, "thin", integer=True)
    require(0 <= burn_blocks < n_blocks, "burn_blocks", f"must be in [0, n_blocks), got {burn_blocks}")
    one_of(method, METHODS, "method")
    h = np.zeros((J.shape[0], U.shape[0])) if h is None else np.asarray(h, float)
    return J, U, h


def parallel_tempering(
    key,
    J,
    U,
    h,
    betas,
    M: int,
    *,
    n_blocks: int,
    thin: int = 1,
    burn_blocks: int = 0,
    method: str = "heat_bath",
    record: int = -1,
    s0=None,
    swaps: bool = True,
) -> MCResult:
    """PT over the ladder ``betas`` (increasing) with ``M`` independent systems (§2.1).

    Records rung ``record`` (default: the largest beta) every ``thin`` sweeps; ``samples`` are
    the snapshots after ``burn_blocks`` blocks, stacked over systems.  ``s0`` (R, M, L) or
    (M, L) (copied to every rung); default uniformly random.
    """
    J, U, h = _validate(J, U, h, M, n_blocks, thin, burn_blocks, method)
    betas = np.atleast_1d(np.asarray(betas, float))
    require(np.all(betas > 0), "betas", "must be > 0")
    require(np.all(np.diff(betas) > 0), "betas", "must be strictly increasing")
    R, L, C = betas.size, J.shape[0], U.shape[0]
    k0, key = jax.random.split(key)
    if s0 is None:
        s0 = jax.random.randint(k0, (R, M, L), 0, C, jnp.int32)
    else:
        s0 = np.asarray(s0, np.int32)
        s0 = np.broadcast_to(s0, (R, M, L)) if s0.ndim == 2 else s0
        require(s0.shape == (R, M, L), "s0", f"must have shape {(R, M, L)}, got {s0.shape}")
    state, info = run_blocks(
        key, init_state(s0), J, U, h, betas, n_blocks=n_blocks, thin=thin, method=method, swaps=swaps
    )
    snaps = np.asarray(info.snapshot)  # (n_blocks, R, M, L)
    acc = np.asarray(info.swap_acc)[burn_blocks:]
    n = np.asarray(info.swap_n)[burn_blocks:]
    swap_acc = (acc * n).sum(0) / np.maximum(n.sum(0), 1) if R > 1 else np.zeros(0)
    return MCResult(
        snaps[burn_blocks:, record].reshape(-1, L),
        snaps,
        np.asarray(info.energy),
        swap_acc,
        np.asarray(state.trips),
        betas,
        state,
    )


def sample_chains(
    key,
    J,
    U,
    h,
    beta: float,
    M: int,
    *,
    n_blocks: int,
    thin: int = 1,
    burn_blocks: int = 0,
    method: str = "heat_bath",
    s0=None,
) -> MCResult:
    """``M`` independent chains at one ``beta`` (heat-bath or Metropolis), no tempering."""
    positive(float(beta), "beta")
    s0 = None if s0 is None else np.asarray(s0)[None]
    return parallel_tempering(
        key,
        J,
        U,
        h,
        [beta],
        M,
        n_blocks=n_blocks,
        thin=thin,
        burn_blocks=burn_blocks,
        method=method,
        s0=s0,
        swaps=False,
    )


def greedy_ground_state(key, J, U, h=None, *, starts: int = 64, sweeps: int = 50) -> np.ndarray:
    """Ground-state guess: greedy (zero-temperature) descent from ``starts`` random configurations;
    returns the lowest-energy one, (L,)."""
    res = sample_chains(key, J, U, h, 1.0, starts, n_blocks=1, thin=sweeps, method="greedy")
    E = res.energy[-1, 0]
    return res.snapshots[-1, 0, int(np.argmin(E))]


def geometric_ladder(beta_min: float, beta_max: float, rungs: int) -> np.ndarray:
    """Geometric inverse-temperature ladder (§2.1)."""
    positive(beta_min, "beta_min")
    positive(rungs, "rungs", integer=True)
    require(beta_max > beta_min or rungs == 1, "beta_max", f"must be > beta_min, got {beta_max}")
    return np.geomspace(beta_min, beta_max, rungs) if rungs > 1 else np.array([beta_max], float)


__all__ = [
    "METHODS",
    "PTState",
    "PTInfo",
    "MCResult",
    "sweep",
    "run_blocks",
    "init_state",
    "parallel_tempering",
    "sample_chains",
    "greedy_ground_state",
    "geometric_ladder",
]
