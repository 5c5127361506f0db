"""Forward map, path expansion and order parameters (docs/theory.md §2.1, §2.4, §4.1, §4.3).

Weights, as arrays:

* ``V0``: ``(N_1, N_0)`` input projection;
* ``values[l-1]``: ``(H_l, N_{l+1}, N_l)`` value matrices of layer ``l`` (``N_{L+1} = N_a``);
* ``a``: ``(N_a,)`` readout.

Paths are flattened with ``h_1`` most significant (theory.md §1).
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ._attention import pool


def path_attention(omegas: Sequence, readout: str):
    """Path attention vectors ``Omega^pi[b, pi, s]`` (theory.md §2.4).

    ``omegas[l]``: ``(P, H_{l+1}, S, S)``; returns ``(P, n_pi, S)``.
    """
    return propagate_paths(pool(omegas[-1], readout), omegas[:-1])


def propagate_paths(v, lower: Sequence):
    """Path attention vectors ``(P, n_pi, S)`` from the pooled last-layer attention ``v`` (``(P, H_L, S)``,
    indexed by key) and the full attention matrices ``lower`` of layers ``1 .. L-1`` (theory.md §2.4)."""
    P, _, S = v.shape
    for om in reversed(lower):
        # (Omega^(l) v)_k = sum_q Omega_kq v_q; the lower layer's head becomes most significant
        v = jnp.einsum("bgkq,bpq->bgpk", om, v).reshape(P, -1, S)
    return v


def path_inputs(x, path_att):
    """Path-propagated inputs ``x^pi = sum_s x_s Omega^pi_s``: ``(P, N0, n_pi)``."""
    return jnp.einsum("bki,bpk->bip", x, path_att)


@jax.jit
def phi(xpi, sigma2_input: float):
    """``Phi[mu, i, pi] = sigma_0 x^pi_i / sqrt(N0 n_pi)`` (theory.md §4.1); one compiled program rather than
    three operations compiled one by one in every process."""
    _, n0, n_pi = xpi.shape
    return jnp.sqrt(sigma2_input) * xpi / jnp.sqrt(n0 * n_pi)


def backward_readouts(values: Sequence, a):
    """Backward-propagated readouts ``w^(l)`` (theory.md §4.3), stacked ``(p_l, N_l)``.

    Returns ``[w^(1), ..., w^(L)]``; ``w^(1)`` is ``W_eff`` (``(n_pi, N_1)``).
    """
    w = a[None, :]  # (1, N_a): p_{L+1} = 1
    out = []
    for V in reversed(values):  # V: (H_l, N_{l+1}, N_l)
        n_next = V.shape[1]
        # w^(l)_{(h, A)} = V_h^T w^(l+1)_A / sqrt(N_{l+1}), h most significant
        w = jnp.einsum("hji,aj->hai", V, w).reshape(-1, V.shape[2]) / jnp.sqrt(n_next)
        out.append(w)
    return out[::-1]


def effective_weights(values: Sequence, a):
    """Effective path weights ``W_eff`` (``(n_pi, N_1)``, theory.md §2.4)."""
    return backward_readouts(values, a)[0]


def gram(w):
    """Overlap ``w w^T / N`` of stacked rows ``w`` (``(p, N)``): the order parameter ``U``."""
    return w @ w.T / w.shape[1]


def order_parameters(values: Sequence, a):
    """Microscopic order parameters ``(U_a, [U_1, ..., U_L])`` (theory.md §4.3)."""
    ws = backward_readouts(values, a)
    return jnp.sum(a**2) / a.shape[0], [gram(w) for w in ws]


def forward_paths(xpi, V0, w_eff):
    """``f(x) = sum_pi W_eff^pi . (V0 x^pi) / sqrt(n_pi N_1 N_0)`` (theory.md §2.4)."""
    _, n0, n_pi = xpi.shape
    M = w_eff @ V0  # (n_pi, N0)
    return jnp.einsum("pi,bip->b", M, xpi) / jnp.sqrt(n_pi * V0.shape[0] * n0)


def forward(x, omegas: Sequence, readout: str, V0, values: Sequence, a):
    """Layer-by-layer forward map of theory.md §2.1 (reference implementation)."""
    n0 = x.shape[-1]
    h = jnp.einsum("ji,bsi->bsj", V0, x) / jnp.sqrt(n0)  # (P, S, N_1)
    L = len(values)
    for l, (om, V) in enumerate(zip(omegas, values)):
        H, _, n_l = V.shape
        if l < L - 1:
            mixed = jnp.einsum("bsj,bhst->bhtj", h, om)
            h = jnp.einsum("hkj,bhtj->btk", V, mixed) / jnp.sqrt(H * n_l)
        else:
            mixed = jnp.einsum("bsj,bhs->bhj", h, pool(om, readout))
            h = jnp.einsum("hkj,bhj->bk", V, mixed) / jnp.sqrt(H * n_l)
    return h @ a / jnp.sqrt(a.shape[0])


def layer_view(heads: Sequence[int], l: int) -> tuple[int, int, int]:
    """``(n_prefix, H_l, n_suffix)`` of 0-based layer ``l``: a path index is ``(prefix, h_l, suffix)``
    with ``h_1`` most significant (theory.md §1)."""
    return math.prod(heads[:l]), heads[l], math.prod(heads[l + 1 :])


def project_input(V0, xpi):
    """``Z_0[mu, pi] = V0 x^pi(x^mu) / sqrt(N0)``: the input projection of every path, ``(P, n_pi, N_1)``."""
    return jnp.einsum("ji,mip->mpj", V0, xpi) / jnp.sqrt(xpi.shape[1])


def apply_layer(heads: Sequence[int], l: int, V, Z):
    """``Z_l[mu, pi] = V^(l, h_l(pi)) Z_{l-1}[mu, pi] / sqrt(H_l N_l)`` (0-based ``l``; ``Z``: ``(P, n_pi, N_l)``).

    Propagating every path separately through the value matrices is the path form of the forward
    map (theory.md §2.4): ``f = sum_pi a . Z_L[pi] / sqrt(N_a)`` (:func:`path_forward`).
    """
    pre, H, suf = layer_view(heads, l)
    P = Z.shape[0]
    out = jnp.einsum("hji,mahbi->mahbj", V, Z.reshape(P, pre, H, suf, -1))
    return out.reshape(P, pre * H * suf, -1) / jnp.sqrt(H * V.shape[2])


def path_forward(heads: Sequence[int], xpi, V0, values: Sequence, a):
    """Network output by propagating every path (equals :func:`forward` and :func:`forward_paths`)."""
    Z = project_input(V0, xpi)
    for l, V in enumerate(values):
        Z = apply_layer(heads, l, V, Z)
    return jnp.einsum("mpj,j->m", Z, a) / jnp.sqrt(a.shape[0])


def backward_vectors(heads: Sequence[int], values: Sequence, a):
    """Per-path backward vectors ``[b^(1), ..., b^(L+1)]``, each ``(n_pi, N_l)``.

    ``b^(L+1)_pi = a / sqrt(N_a)`` and ``b^(l)_pi = V^(l,h_l)^T b^(l+1)_pi / sqrt(H_l N_l)``, so that
    ``df/dV^(l,h) = sum_{pi: h_l = h} b^(l+1)_pi Z_{l-1}[pi]^T / sqrt(H_l N_l)``.  They are the
    backward readouts of :func:`backward_readouts` rescaled and repeated over the path prefix:
    ``b^(l)_pi = w^(l)_{(h_l..h_L)(pi)} / sqrt(p_l N_l)`` (theory.md §4.3).
    """
    n_pi = math.prod(heads)
    ws = backward_readouts(values, a) + [a[None, :]]  # w^(1) .. w^(L), w^(L+1) = a
    out = []
    for l, w in enumerate(ws):
        p_l = w.shape[0]
        out.append(jnp.tile(w, (n_pi // p_l, 1)) / jnp.sqrt(p_l * w.shape[1]))
    return out


def path_labels(head_names: Sequence[Sequence[str]]) -> list[str]:
    """Labels ``"h1,h2,..."`` of the flattened paths (``h_1`` most significant)."""
    return [",".join(p) for p in itertools.product(*head_names)]


def head_membership(heads: Sequence[int]):
    """Integer array ``(n_pi, L)``: the head of each layer on each path."""
    return np.array(list(itertools.product(*[range(h) for h in heads])), dtype=int).reshape(-1, len(heads))
