"""The gauge maps of coupling tensors that the Potts model and the contact scores of protein families share.

Couplings are tensors ``K`` (L, L, C, C) with ``K[i, j, a, b]`` the coupling between colour ``a`` at site i
and colour ``b`` at site j (docs/potts.md §5).  :func:`symmetrise` and :func:`zero_sum` serve the
reconstruction metrics and the pseudo-posterior (:mod:`bayes_attn.potts`, which re-exports them) and the
contact scores (:mod:`bayes_attn.families`); they live here, below both, so that neither layer imports the
other.  Both take NumPy or JAX arrays (a JAX array in, a JAX array out, traceable).
"""

from __future__ import annotations

import jax
import numpy as np


def as_array(x, dtype=None):
    """``x`` itself when it is a JAX array (or a tracer), else as a NumPy array."""
    return x if isinstance(x, jax.Array) else np.asarray(x, dtype)


def symmetrise(K) -> np.ndarray:
    """K^S_ij(a, b) = (K_ij(a, b) + K_ji(b, a)) / 2 (§5)."""
    K = as_array(K)
    return 0.5 * (K + K.transpose(1, 0, 3, 2))


def zero_sum(K) -> np.ndarray:
    """Zero-sum (Ising) gauge per site pair over the colour indices (§5); idempotent."""
    K = as_array(K)
    return K - K.mean(-2, keepdims=True) - K.mean(-1, keepdims=True) + K.mean((-2, -1), keepdims=True)


__all__ = ["as_array", "symmetrise", "zero_sum"]
