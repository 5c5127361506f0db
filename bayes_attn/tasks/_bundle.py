"""User data bundles (``.npz``) -> :class:`Task`.

Keys (inputs are ``(example, token, feature)``):

* ``x_train`` ``(P, S, N0)``, ``y_train`` ``(P,)``, ``x_test`` ``(Q, S, N0)``, ``y_test`` ``(Q,)``;
* attention, one of
  - ``W`` ``(L, H, N0, N0)`` with optional scalar ``beta`` (w-style, equal heads per layer),
  - ``Q`` and ``K`` ``(L, H, G, N0)`` (qk-style),
  - per layer ``l = 1..L`` (heads may differ per layer): ``W_l`` ``(H_l, N0, N0)``, or ``Q_l`` and
    ``K_l``, or user-supplied attention arrays ``attention_train_l`` ``(P, H_l, S, S)`` and
    ``attention_test_l`` ``(Q, H_l, S, S)`` (normalised over keys, axis -2);
* optional ``head_names_l`` (strings) per layer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._errors import InputError, array, require
from ..network import HeadLayer
from ._task import Task


def _read_npz(path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"data.file: cannot read {str(path)!r} (no such file)")
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception as exc:
        raise InputError(f"data.file: cannot read {str(path)!r} as .npz ({type(exc).__name__})") from None


def _layer_names(d: dict, l: int):
    key = f"head_names_{l}"
    return tuple(str(s) for s in d[key]) if key in d else ()


def _check_normalised(om: np.ndarray, field: str):
    require(bool(np.all(om >= 0)), field, "attention weights must be non-negative")
    require(
        bool(np.allclose(om.sum(axis=-2), 1.0, atol=1e-6)),
        field,
        "attention must sum to 1 over keys (axis -2) for every query",
    )


def layers_from_arrays(d: dict) -> tuple[HeadLayer, ...]:
    """Attention layers from bundle arrays (see module docstring)."""
    beta = float(array(d.get("beta", 1.0), "data.beta", ndim=0)) if "beta" in d else 1.0
    if "W" in d:
        W = array(d["W"], "data.W", ndim=4)
        return tuple(HeadLayer.w(W[l], beta, _layer_names(d, l + 1)) for l in range(W.shape[0]))
    if "Q" in d or "K" in d:
        require("Q" in d and "K" in d, "data.K" if "Q" in d else "data.Q", "Q and K must both be given")
        Q, K = array(d["Q"], "data.Q", ndim=4), array(d["K"], "data.K", ndim=4)
        require(Q.shape == K.shape, "data.K", f"must match Q's shape {Q.shape}, got {K.shape}")
        return tuple(HeadLayer.qk(Q[l], K[l], _layer_names(d, l + 1)) for l in range(Q.shape[0]))
    layers = []
    l = 1
    while True:
        names = _layer_names(d, l)
        if f"W_{l}" in d:
            layers.append(HeadLayer.w(array(d[f"W_{l}"], f"data.W_{l}", ndim=3), beta, names))
        elif f"Q_{l}" in d:
            require(f"K_{l}" in d, f"data.K_{l}", "missing (Q and K must both be given)")
            layers.append(
                HeadLayer.qk(
                    array(d[f"Q_{l}"], f"data.Q_{l}", ndim=3), array(d[f"K_{l}"], f"data.K_{l}", ndim=3), names
                )
            )
        elif f"attention_train_{l}" in d:
            require(f"attention_test_{l}" in d, f"data.attention_test_{l}", "missing")
            tr = array(d[f"attention_train_{l}"], f"data.attention_train_{l}", ndim=4)
            te = array(d[f"attention_test_{l}"], f"data.attention_test_{l}", ndim=4)
            _check_normalised(tr, f"data.attention_train_{l}")
            _check_normalised(te, f"data.attention_test_{l}")
            layers.append(HeadLayer.fixed(names, train=tr, test=te))
        else:
            break
        l += 1
    require(bool(layers), "data.W", "no attention found: give W, Q and K, or per-layer W_1/Q_1/attention_train_1")
    return tuple(layers)


def task_from_arrays(d: dict, name: str = "bundle") -> Task:
    """Build and validate a :class:`Task` from a dict of bundle arrays."""
    for key in ("x_train", "y_train", "x_test", "y_test"):
        if key not in d:
            raise InputError(f"data.{key}: missing from the bundle")
    x_tr = array(d["x_train"], "data.x_train", ndim=3)
    S = x_tr.shape[1]
    layers = layers_from_arrays(d)
    for l, layer in enumerate(layers, start=1):
        if layer.style == "fixed":
            tr = layer.params["train"]
            require(
                tr.shape[0] == x_tr.shape[0] and tr.shape[2] == S,
                f"data.attention_train_{l}",
                f"must be ({x_tr.shape[0]}, H, {S}, {S}), got {tr.shape}",
            )
            te = layer.params["test"]
            n_te = np.shape(d["x_test"])[0]
            require(
                te.shape[0] == n_te and te.shape[2] == S,
                f"data.attention_test_{l}",
                f"must be ({n_te}, H, {S}, {S}), got {te.shape}",
            )
    return Task(x_tr, d["y_train"], d["x_test"], d["y_test"], layers, name=name)


def load_bundle(path) -> Task:
    """Read a ``.npz`` bundle into a validated :class:`Task`."""
    return task_from_arrays(_read_npz(path), name=Path(path).stem)


def save_bundle(task: Task, path) -> None:
    """Write ``task`` as a ``.npz`` bundle that :func:`load_bundle` reads back (:meth:`Task.to_npz_dict`)."""
    np.savez(path, **task.to_npz_dict())


__all__ = ["load_bundle", "save_bundle", "task_from_arrays", "layers_from_arrays"]
