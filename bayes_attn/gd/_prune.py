"""Head pruning of the GD network without retraining (theory.md §4.8, §9.2).

Removing heads: :func:`bayes_attn.gd.masked_values` (zero the heads, rescale the layer's
sum by ``1/sqrt(H_l - #dropped)``).  Heads are ``(layer, head)`` pairs, 0-based, and
score arrays are ``(L, H)`` (equal heads per layer) or a dict ``{(l, h): score}``.
"""

from __future__ import annotations

import numpy as np

from .._errors import nonnegative_int, require
from ._train import accuracy


def _heads(params) -> list[tuple[int, int]]:
    return [(l, h) for l, Q in enumerate(params["Q"]) for h in range(Q.shape[0])]


def _flat_scores(params, scores) -> np.ndarray:
    heads = _heads(params)
    if isinstance(scores, dict):
        require(set(scores) == set(heads), "gd.scores", f"needs a score for every head {heads}")
        return np.array([scores[k] for k in heads], dtype=float)
    s = np.asarray(scores, dtype=float).ravel()
    require(s.size == len(heads), "gd.scores", f"needs {len(heads)} scores, got {s.size}")
    return s


def single_head_drops(params, x, y, readout: str = "mean") -> tuple[float, dict]:
    """Full-model accuracy and ``{(l, h): accuracy drop}`` when each head is removed alone."""
    base = accuracy(params, x, y, readout)
    return base, {k: base - accuracy(params, x, y, readout, dropped=(k,)) for k in _heads(params)}


def pruning_curve(params, x, y, order, readout: str = "mean") -> np.ndarray:
    """Accuracies after removing ``order[:k]`` cumulatively, ``k = 0..len(order)`` (NaN once a layer is empty)."""
    order = [tuple(int(v) for v in k) for k in order]
    require(len(set(order)) == len(order), "gd.order", "repeats a head")
    return np.array([accuracy(params, x, y, readout, dropped=order[:k]) for k in range(len(order) + 1)])


def pruning_orders(params, scores, n_random: int = 20, seed: int = 0) -> dict:
    """Removal orders: ``"ascending"`` score (low scores first), ``"descending"`` and ``n_random`` random ones."""
    nonnegative_int(n_random, "gd.n_random")
    heads = _heads(params)
    s = _flat_scores(params, scores)
    asc = [heads[i] for i in np.argsort(s, kind="stable")]
    rng = np.random.default_rng(seed)
    rand = [[heads[i] for i in rng.permutation(len(heads))] for _ in range(n_random)]
    return {"ascending": asc, "descending": asc[::-1], "random": rand}


def rank_correlation(params, scores, drops: dict) -> tuple[float, float]:
    """Spearman rank correlation (and its two-sided p-value) between head score and accuracy drop."""
    from scipy.stats import spearmanr

    heads = _heads(params)
    s = _flat_scores(params, scores)
    d = np.array([drops[k] for k in heads], dtype=float)
    res = spearmanr(s, d)
    return float(res.statistic), float(res.pvalue)


__all__ = ["single_head_drops", "pruning_curve", "pruning_orders", "rank_correlation"]
