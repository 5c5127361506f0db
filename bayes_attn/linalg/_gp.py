"""Gaussian marginal likelihood, energy and GP posterior with an explicit float64 Cholesky.

docs/theory.md eqs. (4.2b), (4.2c) (GP predictor), (4.4a) (energy ``E``) and (5.1a) (collapsed marginal
likelihood).  ``T I`` is added to the train/train block only; no inverse is ever formed.  A matrix
``K + T I`` that is not positive definite gives a NaN Cholesky factor, which every function here
turns into a visible failure: ``-inf`` log-likelihood, ``+inf`` energy, NaN predictions.
"""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg as jsl


def shifted_cholesky(K, T):
    """Lower Cholesky factor of ``K + T I`` and whether it is finite (``K + T I`` positive definite)."""
    Lc = jnp.linalg.cholesky(K + T * jnp.eye(K.shape[0], dtype=K.dtype))
    return Lc, jnp.all(jnp.isfinite(Lc))


def gaussian_log_marginal(K, y, T):
    """``ln N(y; 0, K + T I)`` (docs/theory.md eq. (5.1a)); ``-inf`` when ``K + T I`` is not PD."""
    Lc, ok = shifted_cholesky(K, T)
    alpha = jsl.solve_triangular(Lc, y, lower=True)
    logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(Lc)))
    out = -0.5 * (alpha @ alpha + logdet + y.shape[0] * jnp.log(2.0 * jnp.pi))
    return jnp.where(ok, out, -jnp.inf)


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
