"""Fixed attention (docs/theory.md §2.2, §2.3).

Layout: inputs ``x`` are ``(P, S, N0)``; attention matrices ``Omega`` are
``(P, H, S, S)`` indexed ``[example, head, s (key), t (query)]`` and normalised over
the key axis (``axis=-2``).  Attention depends only on the bare input.

A layer of heads is described by a frozen :class:`HeadLayer`:

* ``HeadLayer.w(W, beta)``: w-style scores ``A_st = beta x_s^T W x_t`` with ``W`` of
  shape ``(H, N0, N0)``;
* ``HeadLayer.qk(Q, K)``: qk-style scores ``A_st = k_s . q_t / sqrt(G)`` with ``Q, K``
  of shape ``(H, G, N0)``;
* ``HeadLayer.fixed(train=..., test=...)``: user-supplied attention arrays per split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import jax.numpy as jnp
import numpy as np

from .._errors import InputError, array, one_of, require


def softmax_keys(scores):
    """Softmax over the key index ``s`` (axis ``-2``) for every query ``t``."""
    scores = scores - jnp.max(scores, axis=-2, keepdims=True)
    e = jnp.exp(scores)
    return e / jnp.sum(e, axis=-2, keepdims=True)


def hardmax_keys(scores):
    """``Omega_st = 1[s = argmax_s' A_s't]`` (theory.md §2.2, optional)."""
    idx = jnp.argmax(scores, axis=-2)
    S = scores.shape[-2]
    return jnp.moveaxis(jnp.eye(S, dtype=scores.dtype)[idx], -1, -2)


def w_scores(x, W, beta=1.0):
    """w-style scores ``A[b,h,s,t] = beta * x_s^T W_h x_t``; ``W``: ``(H, N0, N0)``."""
    return beta * jnp.einsum("bsi,hij,btj->bhst", x, W, x)


def qk_scores(x, Q, K, xq=None):
    """qk-style scores ``A[b,h,s,t] = k_s . q_t / sqrt(G)``; ``Q, K``: ``(H, G, N0)``; keys from ``x``
    (``(P, S, N0)``), queries from ``xq`` (``(P, T, N0)``, default ``x``: every query).

    One contraction of the four factors; ``jnp.einsum`` orders it by operation count, so with ``2 G >= N0`` it
    forms the bilinear form ``K^T Q`` once per head and otherwise projects the tokens onto ``G`` key and query
    directions (the same numbers up to rounding).
    """
    xq = x if xq is None else xq
    return jnp.einsum("hgi,bsi,hgj,btj->bhst", K, x, Q, xq, optimize="optimal") / jnp.sqrt(Q.shape[-2])


def pooled_qk_attention(x, Q, K, readout: str):
    """``pool(softmax_keys(qk_scores(x, Q, K)), readout)`` (``(P, H, S)``) without the unread queries.

    The ``"last"`` and ``"first"`` readouts read one query of the last layer, so only its ``S`` scores per head
    are formed (``S`` times fewer than the full map); ``"mean"`` needs every query and forms the full map.
    """
    if readout not in ("last", "first"):
        return pool(softmax_keys(qk_scores(x, Q, K)), readout)
    t = -1 if readout == "last" else 0
    return softmax_keys(qk_scores(x, Q, K, x[:, t : t + 1 if t >= 0 else None, :]))[..., 0]


def layer_matrices(x, style: str, arrays, hard: bool = False):
    """Attention matrices ``(P, H, S, S)`` of one layer from its arrays: ``{"W"}`` (w-style), ``{"Q", "K"}``
    (qk-style), or, for ``style="fixed"``, the matrices themselves (a pure function of arrays, for ``jit``)."""
    if style == "fixed":
        return arrays
    A = w_scores(x, arrays["W"]) if style == "w" else qk_scores(x, arrays["Q"], arrays["K"])
    return hardmax_keys(A) if hard else softmax_keys(A)


def pool(omega, readout: str):
    """Pooled last-layer attention vector ``omega[b,h,s]`` (theory.md §2.3)."""
    if readout == "last":
        return omega[..., :, -1]
    if readout == "first":
        return omega[..., :, 0]
    if readout == "mean":
        return jnp.mean(omega, axis=-1)
    raise InputError(f"network.readout: unknown value {readout!r}; expected one of 'last', 'first', 'mean'")


@dataclass(frozen=True)
class HeadLayer:
    """The heads of one attention layer (a fixed function of the bare input)."""

    style: str
    params: Mapping[str, np.ndarray]
    names: tuple[str, ...] = ()
    hard: bool = False
    n_heads: int = field(init=False)

    def __post_init__(self):
        one_of(self.style, ("w", "qk", "fixed"), "attention.style")
        if self.style == "w":
            W = array(self.params["W"], "attention.W", ndim=3)
            require(W.shape[1] == W.shape[2], "attention.W", f"must be (H, N0, N0), got {W.shape}")
            H = W.shape[0]
        elif self.style == "qk":
            Q = array(self.params["Q"], "attention.Q", ndim=3)
            K = array(self.params["K"], "attention.K", ndim=3)
            require(Q.shape == K.shape, "attention.K", f"must match Q's shape {Q.shape}, got {K.shape}")
            H = Q.shape[0]
        else:
            shapes = {k: np.shape(v) for k, v in self.params.items()}
            for k, shp in shapes.items():
                require(len(shp) == 4 and shp[2] == shp[3], f"attention.{k}", f"must be (P, H, S, S), got {shp}")
                array(self.params[k], f"attention.{k}")
            Hs = {shp[1] for shp in shapes.values()}
            require(len(Hs) == 1, "attention", f"fixed arrays disagree on the number of heads: {shapes}")
            H = Hs.pop()
        object.__setattr__(self, "n_heads", int(H))
        names = tuple(self.names) if self.names else tuple(str(h) for h in range(H))
        require(len(names) == H, "attention.names", f"needs {H} names, got {len(names)}")
        object.__setattr__(self, "names", names)

    @classmethod
    def w(cls, W, beta: float = 1.0, names=(), hard: bool = False) -> "HeadLayer":
        return cls("w", {"W": np.asarray(W) * float(beta)}, tuple(names), hard)

    @classmethod
    def qk(cls, Q, K, names=(), hard: bool = False) -> "HeadLayer":
        return cls("qk", {"Q": np.asarray(Q), "K": np.asarray(K)}, tuple(names), hard)

    @classmethod
    def fixed(cls, names=(), **splits) -> "HeadLayer":
        return cls("fixed", {k: np.asarray(v) for k, v in splits.items()}, tuple(names))

    def scores(self, x):
        if self.style == "w":
            return w_scores(x, jnp.asarray(self.params["W"]))
        if self.style == "qk":
            return qk_scores(x, jnp.asarray(self.params["Q"]), jnp.asarray(self.params["K"]))
        raise InputError("attention: fixed attention arrays have no scores; use matrices(x, split)")

    def arrays(self, x, split: str | None = None):
        """What :func:`layer_matrices` needs for inputs ``x``: the parameters, or for fixed attention the
        checked matrices of ``split``."""
        if self.style == "fixed":
            require(split in self.params, "attention", f"no fixed attention array for split {split!r}")
            om = jnp.asarray(self.params[split])
            require(
                om.shape[0] == x.shape[0] and om.shape[2] == x.shape[1],
                f"attention.{split}",
                f"shape {om.shape} does not match inputs {x.shape}",
            )
            return om
        return {k: jnp.asarray(v) for k, v in self.params.items()}

    def matrices(self, x, split: str | None = None):
        """Attention matrices ``(P, H, S, S)`` for inputs ``x`` (``split`` names fixed arrays)."""
        return layer_matrices(x, self.style, self.arrays(x, split), self.hard)
