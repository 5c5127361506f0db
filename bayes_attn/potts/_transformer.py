"""Vanilla transformer encoder baseline trained by single-token MLM (potts.md §7.2), plain JAX.

Why plain JAX (project choice): flax/equinox/haiku are not installed and the model is ~60
lines (pre-LayerNorm blocks: multi-head self-attention + GELU MLP of width 4 d, residuals,
no dropout; token embedding with a [MASK] token = colour C, learned positional embedding;
final LayerNorm -> Linear(d -> C)); adding a framework would add a dependency for no gain.

Training: one masked token per sequence per step, AdamW with linear warm-up then cosine decay,
early stopping on the exact PL loss of a validation split (the best parameters are kept).
Evaluation: the exact PL loss, masking every position in turn (L copies of each sequence).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .._errors import positive, require


@dataclass(frozen=True)
class TransformerConfig:
    """A vanilla transformer on sequences of ``L`` sites and ``C`` colours and how :func:`fit_transformer` trains
    it: single-token masked-language-model steps with AdamW (``lr``, ``weight_decay``, mini-batches of ``batch``
    sequences, one masked site each), a warm-up of ``warmup`` steps (at most half of ``steps``) then cosine decay to
    1 % of ``lr`` at ``steps``; the validation PL every ``eval_every`` steps, stopping after ``patience`` checks
    without an improvement larger than ``min_delta`` (the best parameters are kept)."""

    L: int
    C: int
    d_model: int = 32
    layers: int = 2
    heads: int = 4
    lr: float = 1e-3
    weight_decay: float = 1e-4
    batch: int = 128
    steps: int = 3000
    warmup: int = 200
    eval_every: int = 250
    patience: int = 4
    min_delta: float = 1e-4  # an improvement of the validation PL smaller than this does not count

    def __post_init__(self):
        for name in ("L", "C", "d_model", "layers", "heads", "batch", "steps", "eval_every", "patience"):
            positive(getattr(self, name), f"transformer.{name}", integer=True)
        require(self.d_model % self.heads == 0, "transformer.heads", "must divide d_model")
        positive(self.lr, "transformer.lr")
        require(self.min_delta >= 0, "transformer.min_delta", f"must be >= 0, got {self.min_delta}")


def init_transformer(key, cfg: TransformerConfig) -> dict:
    """Random initial parameters of the transformer ``cfg`` (token and position embeddings, ``cfg.layers``
    pre-norm blocks, the output layer), drawn from ``key``."""
    d, C, L = cfg.d_model, cfg.C, cfg.L
    ks = iter(jax.random.split(key, 4 + 4 * cfg.layers))
    nrm = lambda k, shape, fan: jax.random.normal(k, shape) / np.sqrt(fan)  # noqa: E731
    p = {
        "tok": 0.02 * jax.random.normal(next(ks), (C + 1, d)),
        "pos": 0.02 * jax.random.normal(next(ks), (L, d)),
        "ln_f": (jnp.ones(d), jnp.zeros(d)),
        "out": (nrm(next(ks), (d, C), d), jnp.zeros(C)),
        "blocks": [],
    }
    for _ in range(cfg.layers):
        p["blocks"].append(
            {
                "ln1": (jnp.ones(d), jnp.zeros(d)),
                "ln2": (jnp.ones(d), jnp.zeros(d)),
                "qkv": (nrm(next(ks), (d, 3 * d), d), jnp.zeros(3 * d)),
                "proj": (nrm(next(ks), (d, d), d) / np.sqrt(2 * cfg.layers), jnp.zeros(d)),
                "fc1": (nrm(next(ks), (d, 4 * d), d), jnp.zeros(4 * d)),
                "fc2": (nrm(next(ks), (4 * d, d), 4 * d) / np.sqrt(2 * cfg.layers), jnp.zeros(d)),
            }
        )
    return p


def _ln(x, g_b):
    g, b = g_b
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + 1e-5) * g + b


def _lin(x, w_b):
    return x @ w_b[0] + w_b[1]


def transformer_logits(params: dict, tokens, heads: int) -> jax.Array:
    """Logits (B, L, C) for token ids (B, L) in [0, C] (C = [MASK])."""
    x = params["tok"][tokens] + params["pos"]
    B, L, d = x.shape
    for blk in params["blocks"]:
        q, k, v = jnp.split(_lin(_ln(x, blk["ln1"]), blk["qkv"]), 3, axis=-1)
        sh = lambda t: t.reshape(B, L, heads, d // heads).transpose(0, 2, 1, 3)  # noqa: E731
        att = jax.nn.softmax(sh(q) @ sh(k).transpose(0, 1, 3, 2) / np.sqrt(d // heads), axis=-1)
        y = (att @ sh(v)).transpose(0, 2, 1, 3).reshape(B, L, d)
        x = x + _lin(y, blk["proj"])
        x = x + _lin(jax.nn.gelu(_lin(_ln(x, blk["ln2"]), blk["fc1"])), blk["fc2"])
    return _lin(_ln(x, params["ln_f"]), params["out"])


@functools.partial(jax.jit, static_argnames="heads")
def _pl_sum(params: dict, sb, heads: int):
    """Summed -log p(s_i | rest) over the sequences ``sb`` (B, L) and all sites, one masked copy per site.
    Module-level and jitted once per (shapes, heads): evaluating a new set of parameters (every
    validation check of a training run) reuses the compiled code (a closure over the parameters
    recompiled at every call, about 2 s each)."""
    B, L = sb.shape
    C = params["out"][0].shape[1]
    eye = jnp.eye(L, dtype=bool)
    toks = jnp.where(eye[None], C, sb[:, None, :]).reshape(-1, L)  # (B*L, L)
    z = transformer_logits(params, toks, heads).reshape(B, L, L, C)
    z = z[:, jnp.arange(L), jnp.arange(L)]  # (B, L, C) masked site
    logp = jax.nn.log_softmax(z, -1)
    return -jnp.take_along_axis(logp, sb[..., None], -1).sum()


def transformer_pl_loss(params: dict, s, heads: int, chunk: int = 500) -> float:
    """Exact PL loss: every sequence copied L times, one position masked per copy (§4, §7.2)."""
    s = jnp.asarray(s)
    M, L = s.shape
    tot = sum(float(_pl_sum(params, s[i : i + chunk], heads)) for i in range(0, M, chunk))
    return tot / (M * L)


def fit_transformer(key, s_train, s_val, cfg: TransformerConfig, progress: bool = False):
    """Train by single-token MLM; returns (best params, history list of (step, val PL loss))."""
    s_train, s_val = jnp.asarray(s_train), jnp.asarray(s_val)
    M, L = s_train.shape
    C = cfg.C
    k0, key = jax.random.split(key)
    params = init_transformer(k0, cfg)
    warm = min(cfg.warmup, cfg.steps // 2)  # short runs: warm-up at most half of the steps
    sched = optax.warmup_cosine_decay_schedule(0.0, cfg.lr, warm, cfg.steps, cfg.lr * 0.01)
    opt = optax.adamw(sched, weight_decay=cfg.weight_decay)

    def loss(p, sb, pos):
        m = jnp.arange(sb.shape[0])
        toks = sb.at[m, pos].set(C)
        z = transformer_logits(p, toks, cfg.heads)[m, pos]
        return -jnp.mean(jax.nn.log_softmax(z, -1)[m, sb[m, pos]])

    @jax.jit
    def train_chunk(p, st, keys):
        def step(carry, k):
            p, st = carry
            k1, k2 = jax.random.split(k)
            idx = jax.random.randint(k1, (cfg.batch,), 0, M)
            pos = jax.random.randint(k2, (cfg.batch,), 0, L)
            val, g = jax.value_and_grad(loss)(p, s_train[idx], pos)
            upd, st = opt.update(g, st, p)
            return (optax.apply_updates(p, upd), st), val

        (p, st), vals = jax.lax.scan(step, (p, st), keys)
        return p, st, vals.mean()

    st = opt.init(params)
    best, best_val, hist, bad = params, np.inf, [], 0
    for start in range(0, cfg.steps, cfg.eval_every):
        n = min(cfg.eval_every, cfg.steps - start)
        key, k = jax.random.split(key)
        params, st, tr = train_chunk(params, st, jax.random.split(k, n))
        val = transformer_pl_loss(params, s_val, cfg.heads)
        hist.append((start + n, float(tr), val))
        if progress:
            print(f"  step {start + n}: train MLM {float(tr):.4f}  val PL {val:.4f}", flush=True)
        if val < best_val - cfg.min_delta:
            best, best_val, bad = params, val, 0
        else:
            bad += 1
            if bad >= cfg.patience:
                break
    return best, hist


__all__ = ["TransformerConfig", "init_transformer", "transformer_logits", "transformer_pl_loss", "fit_transformer"]
