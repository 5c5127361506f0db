"""Coupling reconstruction and metrics (potts.md §5-6).

Couplings are tensors ``K`` (L, L, C, C) with ``K[i, j, a, b]`` the coupling between colour
``a`` at site i and colour ``b`` at site j (zero for i = j).  The truth is ``beta J_ij U_ab``.
:func:`symmetrise`, :func:`zero_sum` and :func:`gauge_fields` take NumPy or JAX arrays (a JAX array in, a JAX
array out, traceable: the pseudo-posterior stores the gauge-fixed couplings of every draw with them).
"""

from __future__ import annotations

import numpy as np

from .._couplings import as_array, symmetrise, zero_sum
from .._errors import require


def true_couplings(beta: float, J, U) -> np.ndarray:
    """beta J_ij U_ab as (L, L, C, C) (§5)."""
    return beta * np.einsum("ij,ab->ijab", np.asarray(J), np.asarray(U))


def center(U) -> np.ndarray:
    """U^0 = Pi U Pi with Pi = I - 11^T/C (the zero-sum gauge of a colour matrix)."""
    return zero_sum(np.asarray(U))


def offdiag(X) -> np.ndarray:
    """Entries i != j of the leading (L, L) axes, flattened over the rest: (L(L-1), ...)."""
    X = np.asarray(X)
    L = X.shape[0]
    mask = ~np.eye(L, dtype=bool)
    return X[mask]


def abs_corr(x, y) -> float:
    """|Pearson correlation| of two arrays (the scale/sign gauge, §5)."""
    x, y = np.ravel(x), np.ravel(y)
    return float(abs(np.corrcoef(x, y)[0, 1]))


def gauge_fix(K) -> np.ndarray:
    """Symmetrise then zero-sum gauge (the comparison form of §5)."""
    return zero_sum(symmetrise(K))


def coupling_error(K, beta: float, J, U) -> float:
    """Relative Frobenius error eps_J over i != j of gauge-fixed couplings (§6 metric 2)."""
    T = zero_sum(true_couplings(beta, J, U))
    D = offdiag(gauge_fix(K)) - offdiag(T)
    return float(np.linalg.norm(D) / np.linalg.norm(offdiag(T)))


def kronecker_rank1(K) -> tuple[np.ndarray, np.ndarray, float]:
    """Top Kronecker factor of gauge-fixed couplings (§5): (J_hat (L, L) zero diagonal, U_hat (C, C),
    fraction of squared Frobenius norm in the first singular value); up to scale and sign."""
    K0 = gauge_fix(K)
    L, C = K0.shape[0], K0.shape[-1]
    mat = offdiag(K0).reshape(L * (L - 1), C * C)
    u, sv, vt = np.linalg.svd(mat, full_matrices=False)
    Jh = np.zeros((L, L))
    Jh[~np.eye(L, dtype=bool)] = u[:, 0] * sv[0]
    return Jh, vt[0].reshape(C, C), float(sv[0] ** 2 / np.sum(sv**2))


def factor_recovery(A_sym, V, J, U) -> dict:
    """|corr| of off-diagonal A_sym vs J, and of V^0 vs U^0 (§6 metric 3)."""
    return {"corr_A_J": abs_corr(offdiag(A_sym), offdiag(J)), "corr_V_U": abs_corr(center(V), center(U))}


def contact_precision(K, J, ks=None) -> dict:
    """Top-k contact precision with APC-corrected Frobenius scores (§6 metric 4): {k: precision}."""
    K0 = gauge_fix(K)
    L = K0.shape[0]
    F = np.linalg.norm(K0, axis=(-2, -1))
    np.fill_diagonal(F, 0.0)
    row = F.sum(1) / (L - 1)
    F_apc = F - np.outer(row, row) / (F.sum() / (L * (L - 1)))
    i, j = np.triu_indices(L, 1)
    order = np.argsort(-F_apc[i, j])
    true = np.asarray(J)[i, j] != 0
    ks = ks or sorted({L, max(L // 2, 1), max(L // 5, 1)})
    require(true.any(), "J", "has no contacts")
    return {int(k): float(true[order[:k]].mean()) for k in ks}


def nll_gap(nll_model: float, nll_star: float) -> float:
    """Test NLL gap NLL_model - NLL* (§6 metric 1)."""
    return float(nll_model - nll_star)


def gauge_fields(b, K) -> np.ndarray:
    """Fields in the zero-sum gauge that goes with :func:`gauge_fix` (§5), (L, C).

    The conditional logits of site i are ``b_i(a) + sum_{j != i} K_ij(a, s_j)``; moving ``K`` to the
    zero-sum gauge moves the a-dependent means ``mean_b K_ij(a, b)`` into the field of i, and a
    constant shift of the logits is removed: ``h0_i(a) = b_i(a) + sum_j mean_b K_ij(a, b)``, centred
    over a.  ``b = None`` means no fields.  For the truth pass ``beta h`` and ``beta J (x) U``."""
    K = as_array(K)
    L, C = K.shape[0], K.shape[-1]
    Km = K * (1.0 - np.eye(L))[:, :, None, None]
    h = (np.zeros((L, C)) if b is None else as_array(b, float)) + Km.mean(-1).sum(1)
    return h - h.mean(-1, keepdims=True)


def rel_error(x, ref) -> float:
    """||x - ref||_F / ||ref||_F."""
    x, ref = np.ravel(x), np.ravel(ref)
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))


__all__ = [
    "true_couplings",
    "symmetrise",
    "zero_sum",
    "center",
    "offdiag",
    "abs_corr",
    "gauge_fix",
    "coupling_error",
    "kronecker_rank1",
    "factor_recovery",
    "contact_precision",
    "nll_gap",
    "gauge_fields",
    "rel_error",
]
