"""Starting points of factored attention on protein families (docs/potts_proteins.md §4): a balanced random
start and the best sum of Kronecker products of given couplings (a warm start from a plmDCA fit)."""

from __future__ import annotations

import jax
import numpy as np

from .._errors import positive, require
from ._attention import FAConfig
from ._params import FactoredParams

#: default number of heads of factored attention on protein families: the smallest validation PL among
#: 32, 64, 128 and 256 heads on the rhomboid family (benchmarks/potts_proteins/heads.py, docs/potts_proteins.md §4)
PROTEIN_HEADS = 256


def fa_balanced_start(key, cfg: FAConfig, norm: float = 1.0) -> FactoredParams:
    """A random start of free factored attention whose two factors have the same Frobenius norm in every
    head: A^h_ij ~ N(0, (norm / L)^2), V^h_ab ~ N(0, (norm / C)^2), so ||A^h|| ~ ||V^h|| ~ norm
    (docs/potts_proteins.md §4).  The product A (x) V is unchanged by A -> cA, V -> V / c; a start with equal
    entries (``fa_init``) puts L / C times more norm in A than in V, the curvatures of the two factors then
    differ by (L / C)^2, and L-BFGS spends its iterations undoing it (on the rhomboid family, 100 iterations
    from this start reach a lower objective than 500 from ``fa_init``).  The penalty on the factors is
    smallest at equal norms, so this start also sits where the optimum puts the scale.  No fields."""
    require(cfg.kind == "free", "model", "a balanced start is for free factored attention")
    kA, kV = jax.random.split(key)
    return FactoredParams(
        jax.random.normal(kA, (cfg.heads, cfg.L, cfg.L)) * (norm / cfg.L),
        jax.random.normal(kV, (cfg.heads, cfg.C, cfg.C)) * (norm / cfg.C),
    )


def fa_from_couplings(K, fields=None, heads: int = PROTEIN_HEADS) -> FactoredParams:
    """Factored-attention parameters closest to couplings K (L, L, C, C) in Frobenius norm: the top ``heads``
    terms of the singular value decomposition of K as an ``(L*L, C*C)`` matrix, A^h = sqrt(s_h) u_h and
    V^h = sqrt(s_h) v_h (the best sum of ``heads`` Kronecker products, Eckart-Young); ``fields`` are kept as
    the bias.  A warm start for factored attention from any fit (``potts fit --init-from``)."""
    K = np.asarray(K, np.float64)
    require(
        K.ndim == 4 and K.shape[0] == K.shape[1] and K.shape[2] == K.shape[3],
        "init-from",
        f"couplings must have shape (L, L, C, C), got {K.shape}",
    )
    positive(heads, "heads", integer=True)
    L, C = K.shape[0], K.shape[-1]
    require(heads <= min(L * L, C * C), "heads", f"must be <= {min(L * L, C * C)} to start from couplings")
    Km = (K * (1.0 - np.eye(L))[:, :, None, None]).reshape(L * L, C * C)
    u, sv, vt = np.linalg.svd(Km, full_matrices=False)
    r = np.sqrt(sv[:heads])
    return FactoredParams(
        (u[:, :heads] * r).T.reshape(heads, L, L),
        (vt[:heads] * r[:, None]).reshape(heads, C, C),
        None if fields is None else np.asarray(fields, np.float64),
    )


__all__ = ["PROTEIN_HEADS", "fa_balanced_start", "fa_from_couplings"]
