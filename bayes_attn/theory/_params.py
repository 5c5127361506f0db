"""Packing of the order parameters (docs/theory.md §4.7) and traced hyperparameters.

* ``theta``: Cholesky parameters, ``U_l = L_l L_l^T`` with ``L_l`` lower-triangular and
  ``(L_l)_ii = exp(theta_ii)``: every ``theta`` gives positive-definite ``U_l``.
* ``u``: packed upper-triangular entries of the symmetric ``U_l`` (the coordinates of the
  authors' Hessian check, theory.md §4.7).

:class:`Hyper` carries the widths, variances and temperature of a :class:`NetworkSpec` as
JAX leaves (heads stay static), so one compiled solver serves a whole width x temperature
scan.  It exposes the attributes that :mod:`._action` reads from a spec.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np


@jax.tree_util.register_pytree_node_class
class Hyper:
    """Traced stand-in for a :class:`~bayes_attn.network.NetworkSpec` (duck-typed for :mod:`._action`)."""

    def __init__(self, heads, widths, variances, temperature):
        self.heads = tuple(int(h) for h in heads)
        self.widths = widths
        self.variances = variances
        self.temperature = temperature

    @classmethod
    def from_spec(cls, spec) -> "Hyper":
        return cls(spec.heads, jnp.asarray(spec.widths, dtype=jnp.float64),
                   jnp.asarray(spec.variances, dtype=jnp.float64), jnp.asarray(spec.temperature))

    def tree_flatten(self):
        return (self.widths, self.variances, self.temperature), self.heads

    @classmethod
    def tree_unflatten(cls, heads, leaves):
        return cls(heads, *leaves)

    @property
    def n_layers(self) -> int:
        return len(self.heads)

    @property
    def n_paths(self) -> int:
        return math.prod(self.heads)

    def p(self, l: int) -> int:
        return math.prod(self.heads[l - 1:])

    @property
    def sigma2_layers(self):
        return self.variances[1:-1]

    @property
    def sigma2_readout(self):
        return self.variances[-1]


def sizes(heads) -> list[int]:
    """``[p_1, ..., p_L]``."""
    return [math.prod(heads[l:]) for l in range(len(heads))]


def theta_to_us(theta, heads):
    """Cholesky parameters -> ``[U_1, ..., U_L]`` (all positive definite)."""
    out, k = [], 0
    for p in sizes(heads):
        m = p * (p + 1) // 2
        rows, cols = np.tril_indices(p)
        vals = theta[k:k + m]
        vals = jnp.where(jnp.asarray(rows == cols), jnp.exp(vals), vals)
        Lc = jnp.zeros((p, p), dtype=theta.dtype).at[rows, cols].set(vals)
        out.append(Lc @ Lc.T)
        k += m
    return out


def us_to_theta(Us):
    """``[U_1, ..., U_L]`` (positive definite) -> Cholesky parameters."""
    parts = []
    for U in Us:
        Lc = jnp.linalg.cholesky(jnp.asarray(U))
        rows, cols = np.tril_indices(U.shape[0])
        vals = Lc[rows, cols]
        parts.append(jnp.where(jnp.asarray(rows == cols), jnp.log(vals), vals))
    return jnp.concatenate(parts)


def u_to_us(u, heads):
    """Packed upper-triangular entries -> symmetric ``[U_1, ..., U_L]``."""
    out, k = [], 0
    for p in sizes(heads):
        m = p * (p + 1) // 2
        rows, cols = np.triu_indices(p)
        U = jnp.zeros((p, p), dtype=u.dtype).at[rows, cols].set(u[k:k + m])
        out.append(U + jnp.triu(U, 1).T)
        k += m
    return out


def us_to_u(Us):
    """Symmetric ``[U_1, ..., U_L]`` -> packed upper-triangular entries."""
    return jnp.concatenate([U[np.triu_indices(U.shape[0])] for U in Us])


def sym_to_packed_matrix(p: int) -> np.ndarray:
    """``D`` ``(p*p, p(p+1)/2)`` with ``vec(U) = D u`` (row-major ``vec``)."""
    rows, cols = np.triu_indices(p)
    D = np.zeros((p * p, rows.size))
    for k, (i, j) in enumerate(zip(rows, cols)):
        D[i * p + j, k] = 1.0
        D[j * p + i, k] = 1.0
    return D


__all__ = ["Hyper", "sizes", "theta_to_us", "us_to_theta", "u_to_us", "us_to_u", "sym_to_packed_matrix"]
