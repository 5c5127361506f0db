"""Training the GD attention network: MSE to +-1, ``optax.adamw``, early stopping (theory.md §9.2).

Mini-batches come from a callable ``batches(step) -> (x, y)`` (the digits task draws fresh
base-train episodes per step).  Every ``eval_every`` steps the validation accuracy of the
sign of ``f`` is measured; the parameters with the best validation accuracy are kept and
training stops after ``patience`` evaluations without improvement (or at ``steps``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .._errors import InputError, array, require
from ._model import GDConfig, apply, head_masks, init_params, standard_weights


def mse_loss(params, x, y, readout: str):
    """Mean squared error of ``f`` against the +-1 targets."""
    return jnp.mean((apply(params, x, readout) - y) ** 2)


def accuracy(params, x, y, readout: str = "mean", dropped=()) -> float:
    """Accuracy of ``sign f`` with the heads ``dropped`` removed; NaN when a layer loses every head."""
    heads = [Q.shape[0] for Q in params["Q"]]
    masks = head_masks(heads, dropped)
    if any(float(jnp.sum(m)) == 0 for m in masks):
        return float("nan")
    f = _apply_jit(params, jnp.asarray(x), readout, masks)
    return float(np.mean(np.sign(np.asarray(f)) == np.asarray(y)))


_apply_jit = jax.jit(apply, static_argnames="readout")


@dataclass
class GDResult:
    """Best parameters (by validation accuracy) and the training history."""

    params: dict
    config: GDConfig
    best_step: int
    best_val_accuracy: float
    history: list = field(default_factory=list)  # (step, mean train loss since last eval, val accuracy)
    stopped_early: bool = False


def train(cfg: GDConfig, batches: Callable[[int], tuple], val: tuple, n0: int, progress: bool = False) -> GDResult:
    """Train with ``optax.adamw(lr, weight_decay)`` and early stopping on validation accuracy."""
    xv, yv = (array(v, f"gd.val[{i}]") for i, v in enumerate(val))
    opt = optax.adamw(cfg.lr, weight_decay=cfg.weight_decay)
    params = init_params(jax.random.PRNGKey(cfg.seed), cfg, n0)
    state = opt.init(params)

    @jax.jit
    def step(params, state, x, y):
        loss, g = jax.value_and_grad(mse_loss)(params, x, y, cfg.readout)
        upd, state = opt.update(g, state, params)
        return optax.apply_updates(params, upd), state, loss

    best = (-1.0, 0, params)
    history, losses, stale, early = [], [], 0, False
    it = range(1, cfg.steps + 1)
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc="GD training")
    for s in it:
        x, y = batches(s)
        params, state, loss = step(params, state, jnp.asarray(x), jnp.asarray(y))
        losses.append(float(loss))
        if s % cfg.eval_every == 0 or s == cfg.steps:
            if not np.all(np.isfinite(losses)):
                raise FloatingPointError(f"GD training diverged (non-finite loss) before step {s}")
            acc = accuracy(params, xv, yv, cfg.readout)
            history.append((s, float(np.mean(losses)), acc))
            losses = []
            if acc > best[0]:
                best, stale = (acc, s, params), 0
            else:
                stale += 1
                if stale >= cfg.patience:
                    early = True
                    break
    return GDResult(best[2], cfg, best[1], best[0], history, early)


def save_gd(path, result: GDResult, sets: dict | None = None) -> None:
    """``.npz`` with the trained weights (stored and standard O(1) form), config, history and episode sets."""
    p = result.params
    V0, values, a = standard_weights(p)
    out = {
        "V0": np.asarray(V0),
        "a": np.asarray(a),
        "best_step": result.best_step,
        "best_val_accuracy": result.best_val_accuracy,
        "history": np.asarray(result.history, dtype=float),
        "config": np.array(repr(result.config)),
    }
    for l, (V, Q, K) in enumerate(zip(values, p["Q"], p["K"]), start=1):
        out[f"V_{l}"], out[f"Q_{l}"], out[f"K_{l}"] = np.asarray(V), np.asarray(Q), np.asarray(K)
    for name, v in (sets or {}).items():
        if name == "seeds":
            out["set_seeds"] = np.array(repr(dict(v)))
        else:
            out[f"x_{name}"], out[f"y_{name}"] = v
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **out)


def load_gd_params(path) -> dict:
    """Parameters (stored form) from :func:`save_gd`'s ``.npz``."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"gd.file: cannot read {str(p)!r} (no such file)")
    with np.load(p, allow_pickle=False) as z:
        d = {k: z[k] for k in z.files}
    L = sum(1 for k in d if k.startswith("Q_"))
    require(L >= 1 and "V0" in d and "a" in d, "gd.file", f"{str(p)!r} is not a GD network file")
    V = [jnp.asarray(d[f"V_{l}"]) for l in range(1, L + 1)]
    return {
        "V0": jnp.asarray(d["V0"]) / np.sqrt(d["V0"].shape[1]),
        "values": [v / np.sqrt(v.shape[2]) for v in V],
        "a": jnp.asarray(d["a"]) / np.sqrt(d["a"].shape[0]),
        "Q": [jnp.asarray(d[f"Q_{l}"]) for l in range(1, L + 1)],
        "K": [jnp.asarray(d[f"K_{l}"]) for l in range(1, L + 1)],
    }


__all__ = ["GDResult", "train", "accuracy", "mse_loss", "save_gd", "load_gd_params"]
