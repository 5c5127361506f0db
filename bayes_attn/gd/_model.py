"""The gradient-descent attention network of theory.md §9.2 (learned Q/K, no residuals).

Same architecture as the Bayesian network (theory.md §2.1): input projection ``V0``,
``L`` layers of ``H_l`` summed heads with full value matrices, no residuals/LayerNorm/MLP,
pooled readout ``a`` -- except that each head's attention is computed from the bare
tokens with learned ``Q^(l,h)``, ``K^(l,h)`` (``(H, d_qk, N0)``, qk-style scores of §2.2).

Parameterisation *(project choice)*: trainable weights are stored PyTorch-style, i.e.
``V = sqrt(fan_in) * theta`` with ``theta ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` at
initialisation (``nn.Linear``'s default), so that Adam's learning rate 3e-4 means what it
means in the authors' recipe.  :func:`standard_weights` converts to the O(1)-entry
weights of theory.md §2.1, on which :func:`bayes_attn.network.forward` and the order
parameters are defined.  ``Q``/``K`` carry no rescaling (the §2.2 scores have none).

Head removal (theory.md §4.8): a 0/1 mask per layer; the surviving heads' sum is
rescaled by ``1/sqrt(H_l - #dropped)`` instead of ``1/sqrt(H_l)``.  When every head of a
layer is removed the output is identically 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import one_of, positive, require
from ..network import READOUTS, HeadLayer, effective_weights, forward, qk_scores, softmax_keys


@dataclass(frozen=True)
class GDConfig:
    """Architecture and optimiser of the GD network (defaults: theory.md §9.2 digits adaptation)."""

    width: int = 256
    heads: tuple[int, ...] = (4, 4)
    d_qk: int = 16
    readout: str = "mean"
    lr: float = 3e-4
    weight_decay: float = 5e-5
    batch: int = 128
    steps: int = 20000
    eval_every: int = 250
    patience: int = 8  # evaluations without a new best validation accuracy before stopping
    seed: int = 0

    def __post_init__(self):
        positive(self.width, "gd.width", integer=True)
        require(
            isinstance(self.heads, (tuple, list)) and len(self.heads) >= 1,
            "gd.heads",
            f"needs at least one layer, got {self.heads!r}",
        )
        object.__setattr__(self, "heads", tuple(int(positive(h, "gd.heads", integer=True)) for h in self.heads))
        positive(self.d_qk, "gd.d_qk", integer=True)
        one_of(self.readout, READOUTS, "gd.readout")
        positive(self.lr, "gd.lr")
        require(self.weight_decay >= 0, "gd.weight_decay", f"must be >= 0, got {self.weight_decay}")
        for name in ("batch", "steps", "eval_every", "patience"):
            positive(getattr(self, name), f"gd.{name}", integer=True)


def init_params(key, cfg: GDConfig, n0: int) -> dict:
    """PyTorch-style initial parameters: every matrix ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``."""
    N, L = cfg.width, len(cfg.heads)
    keys = iter(jax.random.split(key, 3 * L + 2))

    def unif(shape, fan_in):
        b = 1.0 / np.sqrt(fan_in)
        return jax.random.uniform(next(keys), shape, minval=-b, maxval=b)

    return {
        "V0": unif((N, n0), n0),
        "values": [unif((H, N, N), N) for H in cfg.heads],
        "a": unif((N,), N),
        "Q": [unif((H, cfg.d_qk, n0), n0) for H in cfg.heads],
        "K": [unif((H, cfg.d_qk, n0), n0) for H in cfg.heads],
    }


def standard_weights(params: dict) -> tuple:
    """``(V0, values, a)`` with O(1) entries as in theory.md §2.1 (``sqrt(fan_in)`` times the stored ones)."""
    V0 = params["V0"] * jnp.sqrt(params["V0"].shape[1])
    values = [V * jnp.sqrt(V.shape[2]) for V in params["values"]]
    a = params["a"] * jnp.sqrt(params["a"].shape[0])
    return V0, values, a


def attention(params: dict, x) -> list:
    """Attention matrices ``(P, H_l, S, S)`` of every layer from the bare tokens."""
    return [softmax_keys(qk_scores(x, Q, K)) for Q, K in zip(params["Q"], params["K"])]


def head_masks(heads, dropped=()) -> list:
    """0/1 masks per layer with the heads ``dropped`` (pairs ``(layer, head)``, 0-based) removed."""
    masks = [np.ones(H) for H in heads]
    for l, h in dropped:
        require(0 <= l < len(heads) and 0 <= h < heads[l], "gd.dropped", f"no head ({l}, {h}) in {tuple(heads)}")
        masks[l][h] = 0.0
    return [jnp.asarray(m) for m in masks]


def masked_values(values, masks) -> list:
    """Zero the dropped heads and rescale the layer's sum from ``1/sqrt(H)`` to ``1/sqrt(H - dropped)``."""
    out = []
    for V, m in zip(values, masks):
        kept = jnp.sum(m)
        scale = jnp.where(kept > 0, jnp.sqrt(V.shape[0] / jnp.maximum(kept, 1.0)), 0.0)
        out.append(V * (m * scale)[:, None, None])
    return out


def apply(params: dict, x, readout: str = "mean", masks=None):
    """Network output ``f(x)`` (``(P,)``); optional head masks (see :func:`head_masks`)."""
    V0, values, a = standard_weights(params)
    if masks is not None:
        values = masked_values(values, masks)
    return forward(x, attention(params, x), readout, V0, values, a)


def export_layers(params: dict, names=None) -> tuple[HeadLayer, ...]:
    """The trained ``Q``/``K`` as fixed qk-style attention layers for a :class:`Task`."""
    out = []
    for l, (Q, K) in enumerate(zip(params["Q"], params["K"])):
        H = Q.shape[0]
        nm = names[l] if names is not None else tuple(f"{l}-{h}" for h in range(H))
        out.append(HeadLayer.qk(np.asarray(Q, dtype=np.float64), np.asarray(K, dtype=np.float64), names=nm))
    return tuple(out)


def u_gd(params: dict):
    """``U_GD = W_eff W_eff^T`` of the trained weights (theory.md §9.2): the §4.3 recursion, no ``1/N_1``.

    Compare with ``U*`` after dividing each by its largest absolute entry.
    """
    _, values, a = standard_weights(params)
    w = effective_weights(values, a)
    return w @ w.T


__all__ = [
    "GDConfig",
    "init_params",
    "standard_weights",
    "attention",
    "head_masks",
    "masked_values",
    "apply",
    "export_layers",
    "u_gd",
]
