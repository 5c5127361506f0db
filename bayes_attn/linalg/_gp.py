"""Gaussian marginal likelihood, energy and GP posterior with an explicit float64 Cholesky.

docs/theory.md eqs. (4.2b), (4.2c) (GP predictor), (4.4a) (energy ``E``) and (5.1a) (collapsed marginal
likelihood).  ``T I`` is added to the train/train block only; no inverse is ever formed.  A matrix
``K + T I`` that is not positive definite gives a NaN Cholesky factor, which every function here
turns into a visible failure: ``-inf`` log-likelihood, ``+inf`` energy, NaN predictions.

The marginal likelihood carries its closed-form derivative (docs/theory.md eq. (5.1e)) as a custom JVP:
JAX's derivative of the Cholesky factorization costs about twice as many triangular solves (the
profile in docs/design.md, "Speed: profile and floor", times the densities built on it).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from ._cholesky import log_det_from_cholesky


def shifted_cholesky(K, T):
    """Lower Cholesky factor of ``K + T I`` and whether it is finite (``K + T I`` positive definite)."""
    Lc = jnp.linalg.cholesky(K + T * jnp.eye(K.shape[0], dtype=K.dtype))
    return Lc, jnp.all(jnp.isfinite(Lc))


def _log_marginal(Lc, ok, quad, n: int):
    """``-1/2 (quad + ln det + n ln 2 pi)`` from the Cholesky factor ``Lc`` and the quadratic form
    ``quad = y^T (K + T I)^-1 y``; ``-inf`` where the factor is not finite (``ok`` false)."""
    logdet = log_det_from_cholesky(Lc)
    return jnp.where(ok, -0.5 * (quad + logdet + n * jnp.log(2.0 * jnp.pi)), -jnp.inf)


@jax.custom_jvp
def gaussian_log_marginal(K, y, T):
    """``ln N(y; 0, K + T I)`` (docs/theory.md eq. (5.1a)); ``-inf`` when ``K + T I`` is not PD.

    Differentiable to any order in ``K``, ``y`` and ``T``; the first derivative is the closed form
    (5.1e) (:func:`_gaussian_log_marginal_jvp`), zero where the value is ``-inf``.
    """
    Lc, ok = shifted_cholesky(K, T)
    alpha = jsl.solve_triangular(Lc, y, lower=True)
    return _log_marginal(Lc, ok, alpha @ alpha, y.shape[0])


@gaussian_log_marginal.defjvp
def _gaussian_log_marginal_jvp(primals, tangents):
    """Docs/theory.md eq. (5.1e): with ``G = (K + T I)^-1`` and ``a = G y``, the derivative of
    ``ln N(y; 0, K + T I)`` is ``1/2 (a a^T - G)`` in ``K`` (symmetric, so it serves a tangent ``dK`` that is
    not), ``-a`` in ``y`` and ``1/2 (a.a - tr G)`` in ``T``.  ``G = L^-T L^-1`` from one triangular solve."""
    K, y, T = primals
    dK, dy, dT = tangents
    Lc, ok = shifted_cholesky(K, T)
    L_inv = jsl.solve_triangular(Lc, jnp.eye(K.shape[0], dtype=Lc.dtype), lower=True)
    G = L_inv.T @ L_inv
    a = G @ y
    out = _log_marginal(Lc, ok, a @ y, y.shape[0])
    W = jnp.where(ok, 0.5 * (jnp.outer(a, a) - G), 0.0)  # masked before use: NaN * 0 would leak into gradients
    a = jnp.where(ok, a, 0.0)
    tangent = jnp.sum(W * dK) - a @ dy + jnp.trace(W) * dT
    return out, tangent


def energy(K, y, T):
    """``E = ln det(K + T I) + y^T (K + T I)^-1 y`` (docs/theory.md eq. (4.4a)).

    ``E = -2 ln N(y; 0, K + T I) - P ln 2 pi``; ``+inf`` when ``K + T I`` is not PD.
    """
    y = jnp.asarray(y)
    return -2.0 * gaussian_log_marginal(K, y, T) - y.shape[0] * jnp.log(2.0 * jnp.pi)


def gp_posterior(K, k_star, k_star_diag, y, T):
    """GP regression (docs/theory.md eqs. (4.2b), (4.2c)): mean ``k^T (K+TI)^-1 y`` and variance
    ``K(x*,x*) - k^T (K+TI)^-1 k`` of the latent function (observation noise not included).

    ``K``: ``(P, P)`` train kernel; ``k_star``: ``(P, Q)`` train/test kernel; ``k_star_diag``: ``(Q,)``.
    """
    Lc, _ = shifted_cholesky(K, T)
    alpha = jsl.cho_solve((Lc, True), y)
    mean = k_star.T @ alpha
    B = jsl.solve_triangular(Lc, k_star, lower=True)
    var = k_star_diag - jnp.sum(B * B, axis=0)
    return mean, var


__all__ = ["shifted_cholesky", "gaussian_log_marginal", "energy", "gp_posterior"]
