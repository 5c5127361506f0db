"""Contact prediction from fitted couplings: APC-corrected Frobenius scores and precision at top k
(docs/potts_proteins.md §3).

Score of a pair i < j: take the couplings ``K_ij(a, b)`` over the non-gap states, symmetrise
(``(K_ij(a, b) + K_ji(b, a)) / 2``), move them to the zero-sum gauge over those states,
``F_ij = ||K_ij||_F``, and subtract the average product correction
``APC_ij = F_ij - mean_k F_ik * mean_k F_kj / mean F`` (means over the off-diagonal entries).
"""

from __future__ import annotations

import numpy as np

from .._errors import require
from .._couplings import symmetrise, zero_sum

#: the smallest sequence separation ``|i - j|`` of the pairs of the standard precision table
MIN_SEPARATION = 6
#: the smallest sequence separation ``|i - j|`` of the pairs of the long-range precision table
LONG_RANGE = 24


def frobenius_scores(K, gap: int | None = 0) -> np.ndarray:
    """F_ij of the symmetrised, zero-sum gauged couplings without the ``gap`` state (``None``: keep all);
    (L, L), symmetric, zero diagonal."""
    K = np.asarray(K, float)
    require(
        K.ndim == 4 and K.shape[0] == K.shape[1] and K.shape[2] == K.shape[3],
        "couplings",
        f"must have shape (L, L, C, C), got {K.shape}",
    )
    S = symmetrise(K)
    if gap is not None:
        keep = np.delete(np.arange(K.shape[-1]), gap)
        S = S[:, :, keep][:, :, :, keep]
    F = np.linalg.norm(zero_sum(S), axis=(-2, -1))
    np.fill_diagonal(F, 0.0)
    return F


def apc(F) -> np.ndarray:
    """Average product correction of a symmetric score matrix with a zero diagonal (means off the diagonal)."""
    F = np.asarray(F, float)
    L = F.shape[0]
    off = ~np.eye(L, dtype=bool)
    row = np.where(off, F, 0.0).sum(1) / (L - 1)
    mean = F[off].mean()
    out = F - np.outer(row, row) / mean
    np.fill_diagonal(out, 0.0)
    return out


def contact_scores(K, gap: int | None = 0) -> np.ndarray:
    """APC-corrected Frobenius scores (L, L) of couplings (module docstring)."""
    return apc(frobenius_scores(K, gap))


def ranked_pairs(scores, residues=None) -> dict:
    """Every pair i < j ranked by descending score: arrays ``i``, ``j`` (model columns, 0-based),
    ``res_i``, ``res_j`` (residue numbers; 1-based columns without ``residues``), ``separation``
    (|res_i - res_j|), ``score`` and ``rank`` (1-based)."""
    S = np.asarray(scores)
    L = S.shape[0]
    residues = np.arange(1, L + 1) if residues is None else np.asarray(residues)
    i, j = np.triu_indices(L, 1)
    order = np.lexsort((j, i, -S[i, j]))  # ties: by i, then j
    i, j = i[order], j[order]
    return {
        "i": i,
        "j": j,
        "res_i": residues[i],
        "res_j": residues[j],
        "separation": np.abs(residues[j] - residues[i]),
        "score": S[i, j],
        "rank": np.arange(1, i.size + 1),
    }


def top_k_sizes(L: int) -> dict:
    """The standard cuts {"L/10": k, "L/5": k, "L/2": k, "L": k} (floor, at least 1)."""
    return {"L/10": max(L // 10, 1), "L/5": max(L // 5, 1), "L/2": max(L // 2, 1), "L": L}


def precision_at(
    scores, contacts, known=None, residues=None, *, min_separation: int = MIN_SEPARATION, ks: dict | None = None
) -> dict:
    """Precision of the top-k pairs among those with |res_i - res_j| >= ``min_separation`` and both residues
    ``known`` (resolved in the structure): {cut: {"k", "true", "precision"}}, plus the pairs evaluated,
    the true contacts among them and the random baseline (their density)."""
    S, T = np.asarray(scores), np.asarray(contacts, bool)
    L = S.shape[0]
    require(T.shape == (L, L), "contacts", f"must have shape ({L}, {L}), got {T.shape}")
    known = np.ones(L, bool) if known is None else np.asarray(known, bool)
    r = ranked_pairs(S, residues)
    ok = (r["separation"] >= min_separation) & known[r["i"]] & known[r["j"]]
    hits = T[r["i"][ok], r["j"][ok]]
    out = {
        "pairs": int(ok.sum()),
        "true_pairs": int(hits.sum()),
        "baseline": float(hits.mean()) if hits.size else float("nan"),
        "cuts": {},
    }
    for name, k in (ks or top_k_sizes(L)).items():
        n = min(k, hits.size)
        out["cuts"][name] = {
            "k": int(k),
            "true": int(hits[:n].sum()),
            "precision": float(hits[:n].mean()) if n else float("nan"),
        }
    return out


__all__ = [
    "MIN_SEPARATION",
    "LONG_RANGE",
    "frobenius_scores",
    "apc",
    "contact_scores",
    "ranked_pairs",
    "top_k_sizes",
    "precision_at",
]
