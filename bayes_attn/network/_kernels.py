"""Renormalised kernel, GP regression and the collapsed marginal likelihood.

docs/theory.md §4.1–§4.2 and §5.1.  Everything is written on ``Phi`` (``(P, N0, n_pi)``)
so memory stays ``O(P N0 n_pi + P^2)``; the ``n_pi x n_pi`` array of ``P x P`` path
kernels is never formed here.
"""

from __future__ import annotations


import jax.numpy as jnp
import jax.scipy.linalg as jsl


def renormalized_kernel(phi_a, phi_b, U):
    """``K_U(x, x') = sum_{i,pi,pi'} Phi[x,i,pi] U_{pi pi'} Phi[x',i,pi']`` (theory.md §4.2)."""
    return jnp.einsum("miq,niq->mn", jnp.einsum("mip,pq->miq", phi_a, U), phi_b)


def path_kernel_blocks(phi_a, phi_b):
    """Blocks ``B[pi, pi', m, n] = Phi_pi(x_m) . Phi_pi'(x_n)`` (``= C_{pi pi'} / n_pi``, §4.1).

    Memory ``O(n_pi^2 P_a P_b)``: use only when that is small (see :func:`kernel_fn`).
    """
    return jnp.einsum("mip,niq->pqmn", phi_a, phi_b)


def kernel_fn(phi_a, phi_b, max_floats: float = 2e7):
    """A function ``U -> K_U(x_a, x_b)``.

    Precomputes :func:`path_kernel_blocks` when they hold at most ``max_floats`` numbers
    (then each call costs ``O(n_pi^2 P_a P_b)``); otherwise contracts ``Phi`` on every call
    (``O(P_a P_b N0 n_pi)``, memory ``O(P N0 n_pi)``).  Both give the same kernel.
    """
    n_pi = phi_a.shape[2]
    if n_pi * n_pi * phi_a.shape[0] * phi_b.shape[0] <= max_floats:
        B = path_kernel_blocks(phi_a, phi_b)
        return lambda U: jnp.einsum("pq,pqmn->mn", U, B)
    return lambda U: renormalized_kernel(phi_a, phi_b, U)


def renormalized_kernel_diag(phi, U):
    """Diagonal ``K_U(x, x)`` for every row of ``phi`` (theory.md §4.2)."""
    return jnp.einsum("mip,pq,miq->m", phi, U, phi)


def _chol(K, T):
    P = K.shape[0]
    return jnp.linalg.cholesky(K + T * jnp.eye(P, dtype=K.dtype))


def gaussian_log_marginal(K, y, T):
    """``ln N(y; 0, K + T I)`` with an explicit Cholesky (theory.md §5.1).

    Returns ``-inf`` when ``K + T I`` is not positive definite.
    """
    Lc = _chol(K, T)
    alpha = jsl.solve_triangular(Lc, y, lower=True)
    logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(Lc)))
    out = -0.5 * (alpha @ alpha + logdet + y.shape[0] * jnp.log(2.0 * jnp.pi))
    return jnp.where(jnp.all(jnp.isfinite(Lc)), out, -jnp.inf)


def gp_posterior(K, k_star, k_star_diag, y, T):
    """GP regression (theory.md §4.2): mean ``k^T (K+TI)^{-1} y`` and variance
    ``K(x*,x*) - k^T (K+TI)^{-1} k`` (no observation noise).

    ``K``: ``(P, P)`` train kernel; ``k_star``: ``(P, Q)`` train/test kernel;
    ``k_star_diag``: ``(Q,)``.
    """
    Lc = _chol(K, T)
    alpha = jsl.cho_solve((Lc, True), y)
    mean = k_star.T @ alpha
    B = jsl.solve_triangular(Lc, k_star, lower=True)
    var = k_star_diag - jnp.sum(B * B, axis=0)
    return mean, var


def gp_predict_U(phi_train, phi_test, y, U, T):
    """Predictor mean and variance on test inputs for a given path overlap ``U``.

    This is both the theory predictor at ``U = U_1^*`` (§4.2) and the Rao–Blackwellised
    conditional statistics ``m_W, v_W`` at ``U = U_1(W)`` (§5.1).
    """
    K = renormalized_kernel(phi_train, phi_train, U)
    k_star = renormalized_kernel(phi_train, phi_test, U)
    k_diag = renormalized_kernel_diag(phi_test, U)
    return gp_posterior(K, k_star, k_diag, y, T)


def collapsed_log_likelihood(phi_train, y, U, T):
    """``ln p(y | W) = ln N(y; 0, K_{U_1(W)} + T I)`` (theory.md §5.1)."""
    return gaussian_log_marginal(renormalized_kernel(phi_train, phi_train, U), y, T)


__all__ = [
    "renormalized_kernel",
    "path_kernel_blocks",
    "kernel_fn",
    "renormalized_kernel_diag",
    "gaussian_log_marginal",
    "gp_posterior",
    "gp_predict_U",
    "collapsed_log_likelihood",
]

