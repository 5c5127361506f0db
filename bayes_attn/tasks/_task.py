"""A supervised sequence task with fixed attention: data + attention layers.

Arrays follow the project layout of docs/theory.md §1: inputs ``(example, token, feature)``
= ``(P, S, N0)``, labels ``(P,)``.  The attention matrices and the path-propagated inputs
are derived on demand (and cached) from the bare inputs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import InputError, array, require
from ..network import HeadLayer, NetworkSpec, layer_matrices, path_attention, path_inputs, path_labels, phi

#: the splits of a :class:`Task` (the ``split`` argument of its methods)
SPLITS = ("train", "test")

#: inputs propagated through the attention at a time (:meth:`Task.path_inputs`): the compiled program's
#: intermediates (scores and attention-mixed tokens of every head) then stay near 1 GB whatever ``P`` is
ROW_BLOCK = 2048


@functools.partial(jax.jit, static_argnames=("styles", "hards", "readout"))
def _path_inputs(x, arrays, styles, hards, readout):
    """``x^pi`` (theory.md §2.4) from the layers' arrays, as one compiled program per shapes (a fresh process
    then looks up one program in the persistent cache instead of compiling every operation)."""
    omegas = [layer_matrices(x, st, a, h) for st, a, h in zip(styles, arrays, hards)]
    return path_inputs(x, path_attention(omegas, readout))


@dataclass(frozen=True)
class Task:
    """Training and test data with the fixed attention layers that act on them."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    layers: tuple[HeadLayer, ...]
    name: str = "custom"
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        xtr = array(self.x_train, "data.x_train", ndim=3)
        P, S, n0 = xtr.shape
        ytr = array(self.y_train, "data.y_train", ndim=1)
        require(ytr.shape[0] == P, "data.y_train", f"has {ytr.shape[0]} labels for {P} training inputs")
        xte = array(self.x_test, "data.x_test", shape=(None, S, n0))
        yte = array(self.y_test, "data.y_test", ndim=1)
        require(
            yte.shape[0] == xte.shape[0], "data.y_test", f"has {yte.shape[0]} labels for {xte.shape[0]} test inputs"
        )
        require(len(self.layers) >= 1, "attention", "needs at least one layer")
        for l, layer in enumerate(self.layers):
            require(isinstance(layer, HeadLayer), f"attention.layer{l + 1}", "must be a HeadLayer")
            if layer.style in ("w", "qk"):
                key = "W" if layer.style == "w" else "Q"
                d = np.shape(layer.params[key])[-1]
                require(d == n0, f"attention.{key}", f"layer {l + 1} acts on N0={d}, data have N0={n0}")
        for name, arr in (("x_train", xtr), ("y_train", ytr), ("x_test", xte), ("y_test", yte)):
            object.__setattr__(self, name, np.asarray(arr, dtype=np.float64))
        object.__setattr__(self, "layers", tuple(self.layers))
        object.__setattr__(self, "meta", dict(self.meta))

    # ---- sizes -----------------------------------------------------------------------
    @property
    def n_train(self) -> int:
        return self.x_train.shape[0]

    @property
    def n_test(self) -> int:
        return self.x_test.shape[0]

    @property
    def n_tokens(self) -> int:
        return self.x_train.shape[1]

    @property
    def n0(self) -> int:
        return self.x_train.shape[2]

    @property
    def heads(self) -> tuple[int, ...]:
        return tuple(layer.n_heads for layer in self.layers)

    @property
    def head_names(self) -> tuple[tuple[str, ...], ...]:
        return tuple(layer.names for layer in self.layers)

    @property
    def path_labels(self) -> list[str]:
        return path_labels(self.head_names)

    def spec(self, **kwargs) -> NetworkSpec:
        """A :class:`NetworkSpec` whose heads and ``N0`` match this task."""
        return NetworkSpec(heads=self.heads, n0=self.n0, **kwargs)

    # ---- derived arrays --------------------------------------------------------------
    def _split(self, split: str):
        if split not in SPLITS:
            raise InputError(f"split: unknown value {split!r}; expected 'train' or 'test'")
        return (self.x_train, self.y_train) if split == "train" else (self.x_test, self.y_test)

    def omegas(self, split: str) -> list:
        """Attention matrices ``(n, H_l, S, S)`` of every layer on a split."""
        x, _ = self._split(split)
        return [layer.matrices(jnp.asarray(x), split) for layer in self.layers]

    def path_inputs(self, split: str, readout: str):
        """``x^pi`` on a split: ``(n, N0, n_pi)`` (theory.md §2.4)."""
        key = (split, readout)
        cache = self._cache
        if key not in cache:
            x, _ = self._split(split)
            arrays = tuple(layer.arrays(x, split) for layer in self.layers)
            statics = (tuple(layer.style for layer in self.layers), tuple(layer.hard for layer in self.layers), readout)
            if x.shape[0] <= ROW_BLOCK:
                cache[key] = _path_inputs(jnp.asarray(x), arrays, *statics)
            else:
                cache[key] = self._blocked_path_inputs(x, arrays, statics)  # a NumPy array: no second copy
        return cache[key]

    def _blocked_path_inputs(self, x, arrays, statics) -> np.ndarray:
        """``x^pi`` of many inputs, :data:`ROW_BLOCK` at a time through one compiled program (the last block
        padded with copies of its last input, whose rows are then dropped); fixed attention arrays are sliced
        with the inputs."""
        n, B = x.shape[0], ROW_BLOCK
        fixed = tuple(layer.style == "fixed" for layer in self.layers)

        def rows(a, i):
            a = np.asarray(a[i : i + B])
            return np.concatenate([a, np.repeat(a[-1:], B - a.shape[0], axis=0)]) if a.shape[0] < B else a

        out = None
        for i in range(0, n, B):
            arr_b = tuple(jnp.asarray(rows(a, i)) if f else a for a, f in zip(arrays, fixed))
            block = np.asarray(_path_inputs(jnp.asarray(rows(x, i)), arr_b, *statics))
            if out is None:
                out = np.empty((n, *block.shape[1:]))
            out[i : i + B] = block[: min(B, n - i)]
        return out

    def phi(self, split: str, spec: NetworkSpec):
        """``Phi`` on a split for a network spec (theory.md §4.1), kept: the same object for the same split, readout
        and input variance, so the callers of a scan share one array (and one path-space factorisation,
        :func:`bayes_attn.linalg.training_set`)."""
        spec.check_inputs(self.n0, self.heads)
        key = ("phi", split, spec.readout, float(spec.sigma2_input))
        if key not in self._cache:
            self._cache[key] = phi(self.path_inputs(split, spec.readout), spec.sigma2_input)
        return self._cache[key]

    @cached_property
    def _cache(self) -> dict:
        return {}

    def to_npz_dict(self) -> dict:
        """Arrays in the bundle format of :func:`load_bundle` (fixed attention per layer)."""
        out = {"x_train": self.x_train, "y_train": self.y_train, "x_test": self.x_test, "y_test": self.y_test}
        for l, layer in enumerate(self.layers, start=1):
            if layer.style == "w":
                out[f"W_{l}"] = np.asarray(layer.params["W"])
            elif layer.style == "qk":
                out[f"Q_{l}"] = np.asarray(layer.params["Q"])
                out[f"K_{l}"] = np.asarray(layer.params["K"])
            else:
                for split in SPLITS:
                    out[f"attention_{split}_{l}"] = np.asarray(layer.params[split])
            out[f"head_names_{l}"] = np.array(layer.names)
        return out


__all__ = ["Task", "SPLITS"]
