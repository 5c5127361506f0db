"""Stationarity equations of the theory (docs/theory.md §4.5): the ``U_1`` fixed point (eq. (4.5c))
and the exact root of the ``U_l`` equation (eqs. (4.5d), (4.5e)).

The derivatives of the energy they need (eqs. (4.5a), (4.5b)) are :func:`bayes_attn.linalg.energy_gradient`
and :func:`bayes_attn.linalg.energy_derivatives`.  Used by the independent reference solver
(:mod:`._reference`) and tested against ``jax.grad`` and finite differences.
"""

from __future__ import annotations

import jax.numpy as jnp

from ._action import partial_trace


def u1_fixed_point(U_next, grad_E, spec):
    """Right-hand side of the ``U_1`` stationarity equation (docs/theory.md eq. (4.5c)).

    ``U_1 = [ (I_{H_1} (x) U_2^{-1}) / sigma_1^2 + (1/N_1) dE/dU_1 ]^{-1}``; ``U_next`` is
    ``U_2`` (``L >= 2``) or the scalar ``U_a`` (``L = 1``).
    """
    U_next = jnp.atleast_2d(U_next)
    H1, N1, s2 = spec.heads[0], spec.widths[0], spec.sigma2_layers[0]
    A = jnp.kron(jnp.eye(H1), jnp.linalg.inv(U_next)) / s2 + grad_E / N1
    return jnp.linalg.inv(A)


def u_l_root(U_prev, U_next, l: int, spec):
    """Exact solution of the ``U_l`` stationarity equation for ``2 <= l <= L`` (docs/theory.md eqs. (4.5d), (4.5e)).

    The equation ``N_l[(I (x) U_{l+1}^{-1})/sigma_l^2 - X] + N_{l-1}[H_{l-1} X - X A X/sigma_{l-1}^2] = 0``
    with ``X = U_l^{-1}`` and ``A = Tr_{h_{l-1}} U_{l-1}`` is, for ``X = A^{-1/2} Y A^{-1/2}``,
    ``a Y^2 + c Y = A^{1/2} D A^{1/2}`` with ``a = N_{l-1}/sigma_{l-1}^2``, ``c = N_l - N_{l-1} H_{l-1}``,
    ``D = N_l (I (x) U_{l+1}^{-1})/sigma_l^2``; its unique positive-definite root is
    ``Y = (-c + sqrt(c^2 + 4 a E)) / (2a)`` in the eigenbasis of ``E = A^{1/2} D A^{1/2}``
    (*derived here*; the residual is checked in the tests).  Returns ``U_l = X^{-1}``.
    """
    U_next = jnp.atleast_2d(U_next)
    H_prev, H_l = spec.heads[l - 2], spec.heads[l - 1]
    N_prev, N_l = spec.widths[l - 2], spec.widths[l - 1]
    s2_prev, s2_l = spec.sigma2_layers[l - 2], spec.sigma2_layers[l - 1]
    A = partial_trace(U_prev, H_prev)
    D = N_l * jnp.kron(jnp.eye(H_l), jnp.linalg.inv(U_next)) / s2_l
    w, V = jnp.linalg.eigh(A)
    Ah = (V * jnp.sqrt(w)) @ V.T
    Aih = (V / jnp.sqrt(w)) @ V.T
    a, c = N_prev / s2_prev, N_l - N_prev * H_prev
    e, Q = jnp.linalg.eigh(Ah @ D @ Ah)
    y = (-c + jnp.sqrt(c * c + 4.0 * a * e)) / (2.0 * a)
    X = Aih @ ((Q * y) @ Q.T) @ Aih
    return jnp.linalg.inv((X + X.T) / 2)


__all__ = ["u1_fixed_point", "u_l_root"]
