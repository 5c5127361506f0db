"""The weighted pseudo-likelihood in blocks of sequences, and the coupling route of the logits
(docs/potts_proteins.md §2 and §4).

* **Weighted PL.** ``l_PL = sum_m w_m sum_i -log p(s_mi | s_m,\\i) / (L sum_m w_m)``; with every weight 1
  it is the plain mean over the M*L conditional terms (docs/potts.md §4).
* **Blocks.** The sequences travel as (blocks, rows, L) with their weights (blocks, rows); padding rows
  carry weight 0.  One block when the (M, L, C) logits fit in :data:`BLOCK_ELEMENTS` numbers; otherwise
  each block's loss is rematerialised in the backward pass (``jax.checkpoint``), so memory is
  O(block L C) whatever M is, at the price of one more forward pass.
* **Coupling route.** With the couplings K (L, L, C, C) arranged as a (L*C, L*C) matrix the logits of a
  block are one matrix product of its one-hot rows: M L^2 C^2 multiply-adds that run at the speed of a
  dense BLAS product, against M H L^2 C gathers for factored attention contracted head by head
  (measured: benchmarks/potts_proteins/contraction.py).  :func:`use_coupling_route` chooses by that cost.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import positive

#: logits of at most this many numbers are computed in one block (256 MB in float32)
BLOCK_ELEMENTS = 1 << 26
#: cost of one gathered multiply-add of the head-by-head route relative to one multiply-add of the dense
#: product (the coupling route); measured on CPU by benchmarks/potts_proteins/contraction.py
GATHER_COST = 3.0


def use_coupling_route(heads: int, C: int) -> bool:
    """True when forming K = sum_h A^h (x) V^h and one dense product (M L^2 C^2) is cheaper than the
    head-by-head gather (GATHER_COST * M H L^2 C), i.e. when GATHER_COST * heads > C."""
    return GATHER_COST * heads > C


def block_rows(L: int, C: int, M: int) -> int:
    """Rows per block: all M when the logits fit in :data:`BLOCK_ELEMENTS`, else as many as fit."""
    return int(M if M * L * C <= BLOCK_ELEMENTS else max(1, BLOCK_ELEMENTS // (L * C)))


def to_blocks(s, weights=None, *, C: int, rows: int | None = None, dtype=jnp.float64):
    """(sequences (nb, B, L) int32, weights (nb, B) ``dtype``) padded with weight-0 rows."""
    s = np.asarray(s, np.int32)
    M, L = s.shape
    w = np.ones(M) if weights is None else np.asarray(weights, float)
    B = block_rows(L, C, M) if rows is None else int(rows)
    nb = -(-M // B)
    pad = nb * B - M
    sp = np.concatenate([s, np.zeros((pad, L), np.int32)]).reshape(nb, B, L)
    wp = np.concatenate([w, np.zeros(pad)]).reshape(nb, B)
    return jnp.asarray(sp), jnp.asarray(wp, dtype)


def weighted_nll_sum(logits, s, w):
    """sum_m w_m sum_i -log softmax(logits_mi)[s_mi] of one block."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    ll = jnp.take_along_axis(logp, s[..., None], axis=-1)[..., 0]
    return -jnp.sum(w[:, None] * ll)


def blocked_pl(block_logits, sb, wb):
    """Weighted PL loss over blocks; ``block_logits(s_block) -> (B, L, C)``."""
    L = sb.shape[-1]
    one = lambda s, w: weighted_nll_sum(block_logits(s), s, w)  # noqa: E731
    if sb.shape[0] == 1:
        total = one(sb[0], wb[0])
    else:
        f = jax.checkpoint(one)
        total = jax.lax.map(lambda a: f(*a), (sb, wb)).sum()
    return total / (jnp.sum(wb) * L)


def coupling_matrix(K):
    """K (L, L, C, C) -> ``(L*C [j, b], L*C [i, a])`` with the i = j blocks zeroed."""
    L, C = K.shape[0], K.shape[-1]
    Km = K * (1.0 - jnp.eye(L, dtype=K.dtype))[:, :, None, None]
    return Km.transpose(1, 3, 0, 2).reshape(L * C, L * C)


def coupling_logits(Km, s, fields=None):
    """z_i(a) = sum_{j != i} K_ij(a, s_j) (+ fields) for rows ``s`` (B, L): one product of their one-hot rows."""
    B, L = s.shape
    C = Km.shape[0] // L
    X = jax.nn.one_hot(s, C, dtype=Km.dtype).reshape(B, L * C)
    z = (X @ Km).reshape(B, L, C)
    return z if fields is None else z + fields


def site_blocks(L: int, site_block: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]``: the L sites in ceil(L / site_block) consecutive blocks of near-equal size
    (sizes differ by at most one, so at most two block shapes are compiled)."""
    positive(site_block, "site_block", integer=True)
    n = -(-L // min(site_block, L))
    edges = np.linspace(0, L, n + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def one_hot_rows(s, C: int, dtype=jnp.float32):
    """The one-hot rows of sequences ``s`` (B, L): (B, L*C)."""
    return jax.nn.one_hot(s, C, dtype=dtype).reshape(s.shape[0], s.shape[1] * C)


def site_logits(X, Kb, sites, fields=None):
    """z_i(a) = sum_{j != i} K_ij(a, s_j) (+ fields) for the sites ``sites`` only, (B, |sites|, C): the one-hot
    rows ``X`` (B, L*C) times the (L*C [j, b], |sites|*C [i, a]) columns of the coupling matrix, built from
    the rows ``Kb`` = K[sites] (|sites|, L, C, C) with K_ii masked (docs/potts_proteins.md §4, "Blocks of
    sites").  With every site it is :func:`coupling_logits`."""
    nb, L, C = Kb.shape[0], Kb.shape[1], Kb.shape[-1]
    mask = (sites[:, None] != jnp.arange(L)[None, :]).astype(Kb.dtype)[:, :, None, None]
    cols = (Kb * mask).transpose(1, 3, 0, 2).reshape(L * C, nb * C)
    z = (X @ cols).reshape(X.shape[0], nb, C)
    return z if fields is None else z + fields


__all__ = [
    "site_blocks",
    "one_hot_rows",
    "site_logits",
    "BLOCK_ELEMENTS",
    "GATHER_COST",
    "use_coupling_route",
    "block_rows",
    "to_blocks",
    "weighted_nll_sum",
    "blocked_pl",
    "coupling_matrix",
    "coupling_logits",
]
