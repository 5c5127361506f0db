"""Exact posterior of a one-path network by quadrature (the reference of tests/test_exact_samplers.py).

With one layer of one head (``L = H = 1``) the network has a single attention path and its order
parameters are scalars: ``U_a = sigma_a^2 X_a / N_a`` and ``U_1 | U_a = sigma_1^2 U_a X_1 / N_1`` with
``X ~ chi^2`` (docs/theory.md eq. (5.2a)); the likelihood depends on the weights only through
``u = U_1``: ``y ~ N(0, u K0 + T I)`` with ``K0`` the path kernel (eqs. (5.1a), (4.2a)).  Hence the
posterior predictive mean and variance of ``f(x*)`` are two-dimensional integrals over
``(ln U_a, ln U_1)``, done here on a tensor grid (trapezoid in log coordinates; the integrand is
smooth and decays like a Gamma density, so the rule converges geometrically):

    E[f] = E[m_u],   Var f = E[v_u] + E[m_u^2] - E[m_u]^2,
    m_u = u k0^T (u K0 + T I)^-1 y,   v_u = u k0** - u^2 k0^T (u K0 + T I)^-1 k0      (eq. (5.1c))

Independent of the package's samplers, models and theory: only ``numpy``/``scipy`` and ``Phi``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln


def _log_gamma_density(x, shape, rate):
    """log density of Gamma(shape, rate) at x > 0."""
    return shape * np.log(rate) - gammaln(shape) + (shape - 1) * np.log(x) - rate * x


def exact_predictive(phi_train, phi_test, y, widths, variances, T, n_grid=1601):
    """``(mean, var)`` of ``f`` on the test inputs under the exact finite-width posterior (module docstring).

    ``phi_*``: ``(P, N0, 1)`` / ``(Q, N0, 1)``; ``widths = (N_1, N_a)``; ``variances = (s0, s1, sa)``.
    """
    p0 = np.asarray(phi_train)[:, :, 0]
    p1 = np.asarray(phi_test)[:, :, 0]
    y = np.asarray(y, dtype=float)
    K0, k0, k0s = p0 @ p0.T, p0 @ p1.T, np.sum(p1 * p1, axis=1)
    lam, Q = np.linalg.eigh(K0)
    z, kq = Q.T @ y, Q.T @ k0  # (P,), (P, Qn)
    N1, Na = widths
    _, s1, sa = variances

    def log_range(k):  # where a Gamma(k, rate k) variable has mass, in log coordinates (tails < e^-35)
        return -35.0 / k - 1.0, np.log1p(70.0 / k) + 3.0

    lo_a, hi_a = log_range(Na / 2)
    lo_1, hi_1 = log_range(N1 / 2)
    la = np.log(sa) + np.linspace(lo_a, hi_a, n_grid)
    lu = np.log(s1 * sa) + np.linspace(lo_a + lo_1, hi_a + hi_1, n_grid)
    a, u = np.exp(la)[:, None], np.exp(lu)[None, :]
    # prior in (ln a, ln u): p(a) a * p(u | a) u
    log_prior = (
        _log_gamma_density(a, Na / 2, Na / (2 * sa))
        + la[:, None]
        + _log_gamma_density(u, N1 / 2, N1 / (2 * s1 * a))
        + lu[None, :]
    )
    d = u[0][:, None] * lam[None, :] + T  # (n_u, P)
    log_lik = -0.5 * (np.sum(z**2 / d, axis=1) + np.sum(np.log(d), axis=1))
    log_w = log_prior + log_lik[None, :]
    w = np.exp(log_w - log_w.max())
    w_u = w.sum(axis=0)  # marginal weight of each u (the trapezoid weights cancel on a uniform grid)
    w_u /= w_u.sum()
    uu = u[0]
    m = uu[:, None] * ((z / d) @ kq)  # (n_u, Qn)
    v = uu[:, None] * k0s[None, :] - uu[:, None] ** 2 * ((1.0 / d) @ (kq**2))
    mean = w_u @ m
    var = w_u @ v + w_u @ (m**2) - mean**2
    edge = max(w[:, :3].max(), w[:, -3:].max(), w[:3].max(), w[-3:].max())
    if edge > 1e-12:
        raise ValueError(f"quadrature grid too narrow (edge weight {edge:.1e})")
    return mean, var


__all__ = ["exact_predictive"]
