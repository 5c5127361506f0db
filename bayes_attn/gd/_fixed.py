"""Training the GD network on a fixed training set (the hidden-Markov task: ``P`` sequences, no generator).

The digits task draws fresh episodes per step; the Markov task has ``P`` training sequences and nothing more,
the same data the Bayesian networks see.  *(Project choice, docs/attention.md "Gradient-trained network".)*
Early stopping needs data the weights are not fitted to, so a fixed fraction of the ``P`` sequences (chosen
at random with the seed, stratified by label) is held out for validation and the network trains on the rest;
mini-batches walk through the kept sequences in a fresh random order each epoch.  Test data are never seen.
"""

from __future__ import annotations

import numpy as np

from .._errors import array, require
from ._model import GDConfig
from ._train import GDResult, train


def holdout_split(y, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(fit, val)`` of a split with ``round(fraction * n_c)`` of each label class ``c`` in ``val``."""
    y = np.asarray(y)
    require(0.0 < fraction < 1.0, "gd.val_fraction", f"must be in (0, 1), got {fraction}")
    rng = np.random.default_rng(seed)
    fit, val = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        k = int(round(fraction * len(idx)))
        require(0 < k < len(idx), "gd.val_fraction", f"leaves no sequence of label {c:g} on one side of the split")
        val.append(idx[:k])
        fit.append(idx[k:])
    return np.sort(np.concatenate(fit)), np.sort(np.concatenate(val))


def epoch_batches(x, y, batch: int, seed: int):
    """``batches(step) -> (x, y)`` walking through ``(x, y)`` in a fresh random order each epoch.

    Every epoch visits each sequence once; a last batch shorter than ``batch`` is dropped from the epoch (the
    order differs between epochs, so every sequence is used).  With ``batch`` at least the set size every batch is
    the whole set (full-batch training).
    """
    x, y = np.asarray(x), np.asarray(y)
    n = len(y)
    b = min(int(batch), n)
    per_epoch = n // b
    orders: dict[int, np.ndarray] = {}

    def batches(step: int):
        e, i = divmod(step - 1, per_epoch)
        if e not in orders:
            orders.clear()
            orders[e] = np.random.default_rng([seed, e]).permutation(n)
        sel = orders[e][i * b : (i + 1) * b]
        return x[sel], y[sel]

    return batches


def train_on_set(cfg: GDConfig, x, y, val_fraction: float = 0.2, progress: bool = False) -> GDResult:
    """Train on a fixed set ``(x, y)``: hold out ``val_fraction`` for early stopping, mini-batches of the rest."""
    x, y = array(x, "gd.x", ndim=3), array(y, "gd.y", ndim=1)
    require(len(x) == len(y), "gd.y", f"has {len(y)} labels for {len(x)} sequences")
    fit, val = holdout_split(y, val_fraction, cfg.seed)
    batches = epoch_batches(x[fit], y[fit], cfg.batch, cfg.seed)
    return train(cfg, batches, (x[val], y[val]), n0=x.shape[2], progress=progress)


__all__ = ["holdout_split", "epoch_batches", "train_on_set"]
