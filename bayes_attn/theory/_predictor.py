"""Theory predictor statistics, GP limit and GP on path subsets (docs/theory.md §3, §4.2, §4.6)."""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import jax
import jax.scipy.special
import jax.numpy as jnp
import numpy as np

from .._errors import require
from .._programs import disk_jit
from ..linalg import training_set
from ..network import path_kernels, predictive


@disk_jit
def _predict(U, phi_train, phi_test, y, T):
    return predictive(U, path_kernels(phi_train, phi_test, once=True), y, T)


def predict(U, phi_train, phi_test, y, T, *, path_space: str = "auto"):
    """Predictor mean and variance on the test inputs at path overlap ``U`` (docs/theory.md eq. (4.2b)).

    :func:`bayes_attn.network.predictive` with the kernel data of ``phi_train`` and ``phi_test``;
    observation noise ``T`` is not included in the variance.  The training set enters through its path-space
    points where they are fewer than the inputs (``path_space``, :func:`bayes_attn.linalg.use_path_space`;
    docs/theory.md eq. (4.10d)): the same numbers, at a cost independent of ``P``.  One compiled program per
    shapes (``T`` is traced), so a scan over widths and temperatures compiles it once.
    """
    phi_kd, y_kd, _ = training_set(phi_train, y, path_space)
    return _predict(*(_float64(a) for a in (U, phi_kd, phi_test, y_kd, T)))


def _float64(a):
    """``a`` as a float64 device array, converted on the host when it is not one (no conversion program)."""
    if isinstance(a, jax.Array) and a.dtype == jnp.float64:
        return a
    return jnp.asarray(np.asarray(a, dtype=np.float64))


def predictor_metrics(mean, var, y_test) -> dict[str, float]:
    """Metrics of §3: accuracy of ``sign <f>``, bias, variance and generalisation error,
    probabilistic accuracy ``mean Phi_N(y <f> / sqrt(Var f))``."""
    mean, var, y = (np.asarray(a, dtype=np.float64) for a in (mean, var, y_test))
    bias = float(np.mean((mean - y) ** 2))
    variance = float(np.mean(var))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > 0, y * mean / np.sqrt(np.maximum(var, 0.0)), np.sign(y * mean) * np.inf)
    return {
        "accuracy": float(np.mean(np.sign(mean) == y)),
        "bias": bias,
        "variance": variance,
        "gen_error": bias + variance,
        "prob_accuracy": float(np.mean(np.asarray(_ndtr(z)))),
    }


def subset_paths(heads: Sequence[int], keep: Sequence[Sequence[int]]) -> np.ndarray:
    """Flat indices of the paths of the sub-network that keeps heads ``keep[l]`` in layer ``l``."""
    require(len(keep) == len(heads), "keep", f"needs one head list per layer ({len(heads)}), got {len(keep)}")
    for l, (H, ks) in enumerate(zip(heads, keep)):
        require(
            len(ks) >= 1 and all(0 <= k < H for k in ks) and len(set(ks)) == len(ks),
            f"keep[{l}]",
            f"must list distinct heads in 0..{H - 1}, got {list(ks)}",
        )
    strides = [math.prod(heads[l + 1 :]) for l in range(len(heads))]
    return np.array([sum(h * s for h, s in zip(p, strides)) for p in itertools.product(*keep)], dtype=int)


@disk_jit
def _take_paths(phi, idx, scale):
    return phi[:, :, idx] * scale


#: the standard normal CDF as one compiled program (JAX's: importing scipy.special costs 0.2 s of a start-up,
#: and JAX's ndtr run op by op compiles a dozen programs)
_ndtr = disk_jit(jax.scipy.special.ndtr)


def subset_phi(phi, heads: Sequence[int], keep: Sequence[Sequence[int]]):
    """``Phi`` of the sub-network built from the heads ``keep`` only (§4.6, GP on a path subset).

    ``Phi`` carries ``1/sqrt(n_pi)``; the sub-network has ``n_sub`` paths, hence the factor
    ``sqrt(n_pi / n_sub)``.
    """
    idx = subset_paths(heads, keep)
    if np.array_equal(idx, np.arange(phi.shape[2])):
        return phi  # every head kept: the network itself (no copy, and the same path-space factorisation)
    return _take_paths(phi, idx, math.sqrt(phi.shape[2] / idx.size))


def gp_predict(spec, phi_train, phi_test, y, keep=None, path_space: str = "auto"):
    """GP-limit predictor (§4.6) of the full network or of the sub-network with heads ``keep``."""
    if keep is not None:
        phi_train = subset_phi(phi_train, spec.heads, keep)
        phi_test = subset_phi(phi_test, spec.heads, keep)
    n = phi_train.shape[2]
    return predict(spec.gp_scale * np.eye(n), phi_train, phi_test, y, spec.temperature, path_space=path_space)


__all__ = ["predict", "predictor_metrics", "subset_paths", "subset_phi", "gp_predict"]
