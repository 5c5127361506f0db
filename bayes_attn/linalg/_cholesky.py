"""Coordinates of symmetric positive-definite matrices (docs/theory.md eqs. (4.7a), (5.2d)).

* **log-Cholesky** ``theta``: ``U = L L^T`` with ``L`` lower-triangular, ``L_ii = exp(theta_ii)``,
  packed row by row (row-major lower triangle).  Every ``theta`` gives a positive-definite ``U``.
  The map ``theta -> (upper-triangular entries of U)`` has the log-Jacobian
  ``p ln 2 + sum_{i=1}^p (p - i + 2) theta_ii`` (eq. (5.2d); checked against autodiff in the tests).
* **packed symmetric** ``u``: the upper-triangular entries of ``U`` (row-major), the coordinates in
  which the saddle-point Hessian is checked (docs/theory.md §4.7).

A list ``[U_1, ..., U_L]`` is packed by concatenating the per-matrix vectors.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np


def tril_size(p: int) -> int:
    """Number of free entries ``p (p + 1) / 2`` of a symmetric ``p x p`` matrix."""
    return p * (p + 1) // 2


def diag_positions(p: int) -> np.ndarray:
    """Positions of the diagonal in the packed row-major lower triangle."""
    i = np.arange(p)
    return i * (i + 1) // 2 + i


def diagonal(a):
    """The diagonal of a square matrix as a strided slice of its flattened entries: the same numbers as
    ``jnp.diagonal``, which lowers to a gather behind two conditionals (a cost in compilation time, not in run
    time, paid in every program that takes a log-determinant from a Cholesky factor)."""
    n = a.shape[-1]
    return jnp.reshape(a, a.shape[:-2] + (n * n,))[..., :: n + 1]


def log_det_from_cholesky(c):
    """``ln det(C C^T) = 2 sum_i ln C_ii`` for a lower Cholesky factor ``C`` (NaN when ``C`` is, i.e. when the
    factorised matrix is not positive definite)."""
    return 2.0 * jnp.sum(jnp.log(diagonal(c)), axis=-1)


def _tril_placement(p: int) -> np.ndarray:
    """``E`` ``(p*p, p(p+1)/2)`` with ``vec(L) = E theta`` for the packed row-major lower triangle (row-major
    ``vec``): placing the triangle by a product with this constant 0/1 matrix compiles to one small dot (and its
    transpose), where an indexed scatter compiled to a scatter and, in the gradient, a gather."""
    rows, cols = np.tril_indices(p)
    E = np.zeros((p * p, rows.size))
    E[rows * p + cols, np.arange(rows.size)] = 1.0
    return E


def _diagonal_mask(p: int) -> np.ndarray:
    """Boolean mask of the diagonal in the packed row-major lower triangle."""
    mask = np.zeros(tril_size(p), dtype=bool)
    mask[diag_positions(p)] = True
    return mask


def cholesky_factor(theta, p: int):
    """``L`` with ``L_ii = exp(theta_ii)`` from the packed row-major lower triangle ``theta``."""
    vals = jnp.where(_diagonal_mask(p), jnp.exp(theta), theta)
    return (jnp.asarray(_tril_placement(p), dtype=theta.dtype) @ vals).reshape(p, p)


def cholesky_theta(U):
    """Inverse of ``theta -> L L^T``: the packed log-Cholesky parameters of a PD matrix ``U``."""
    U = jnp.asarray(U)
    p = U.shape[-1]
    L = jnp.linalg.cholesky(U)
    rows, cols = np.tril_indices(p)
    theta = L[rows, cols]
    d = diag_positions(p)
    return theta.at[d].set(jnp.log(theta[d]))


def cholesky_log_jacobian(theta, p: int):
    """``ln |dU / dtheta| = p ln 2 + sum_{i=1}^p (p - i + 2) theta_ii`` (docs/theory.md eq. (5.2d))."""
    weights = np.zeros(tril_size(p))
    weights[diag_positions(p)] = p + 1 - np.arange(p)  # (p - i + 2) for 1-based i, 0 off the diagonal
    return p * np.log(2.0) + jnp.dot(jnp.asarray(weights, dtype=theta.dtype), theta)


def unpack_cholesky(theta, sizes):
    """Concatenated log-Cholesky parameters -> ``[U_1, ..., U_L]`` of sizes ``sizes`` (all PD)."""
    out, k = [], 0
    for p in sizes:
        L = cholesky_factor(theta[k : k + tril_size(p)], p)
        out.append(L @ L.T)
        k += tril_size(p)
    return out


def pack_cholesky(Us):
    """``[U_1, ..., U_L]`` (positive definite) -> concatenated log-Cholesky parameters."""
    return jnp.concatenate([cholesky_theta(U) for U in Us])


def unpack_symmetric(u, sizes):
    """Packed upper-triangular entries -> symmetric ``[U_1, ..., U_L]``."""
    out, k = [], 0
    for p in sizes:
        rows, cols = np.triu_indices(p)
        U = jnp.zeros((p, p), dtype=u.dtype).at[rows, cols].set(u[k : k + tril_size(p)])
        out.append(U + jnp.triu(U, 1).T)
        k += tril_size(p)
    return out


def pack_symmetric(Us):
    """Symmetric ``[U_1, ..., U_L]`` -> packed upper-triangular entries."""
    return jnp.concatenate([U[np.triu_indices(U.shape[0])] for U in Us])


def symmetric_to_packed_matrix(p: int) -> np.ndarray:
    """``D`` ``(p*p, p(p+1)/2)`` with ``vec(U) = D u`` (row-major ``vec``)."""
    rows, cols = np.triu_indices(p)
    D = np.zeros((p * p, rows.size))
    for k, (i, j) in enumerate(zip(rows, cols)):
        D[i * p + j, k] = 1.0
        D[j * p + i, k] = 1.0
    return D


__all__ = [
    "tril_size",
    "diagonal",
    "log_det_from_cholesky",
    "diag_positions",
    "cholesky_factor",
    "cholesky_theta",
    "cholesky_log_jacobian",
    "unpack_cholesky",
    "pack_cholesky",
    "unpack_symmetric",
    "pack_symmetric",
    "symmetric_to_packed_matrix",
]
