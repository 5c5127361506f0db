"""Gaussian-spin ridge scenario: deterministic-equivalent (replica-symmetric) generalisation
error of factored attention trained by pseudo-likelihood, and its simulation (potts.md §9.2).

Teacher: x ~ N(0, K^{-1}), K = nu I + Omega / sqrt(L) (Omega GOE-like, zero diagonal);
exact conditional x_i | rest ~ N(w*.x_rest, sigma^2) with w* = -K_{i,rest}/K_ii, sigma^2 = 1/K_ii.
Student: per-site ridge regression (scalar-value factored attention, free A), alpha = M/(L-1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from .._errors import positive, require


@dataclass(frozen=True)
class Teacher:
    """Precision K (L, L) and the per-site conditional regressions it implies (§9.2)."""

    K: np.ndarray

    @property
    def L(self) -> int:
        return self.K.shape[0]

    def site(self, i: int):
        """(Sigma (L-1, L-1), w* (L-1,), sigma^2) for site i."""
        K = self.K
        rest = np.delete(np.arange(self.L), i)
        cov = np.linalg.inv(K)
        Sigma = cov[np.ix_(rest, rest)]
        w = -K[i, rest] / K[i, i]
        return Sigma, w, 1.0 / K[i, i]


def gaussian_teacher(L: int, nu: float = 3.0, seed: int = 0) -> Teacher:
    """K = nu I + Omega/sqrt(L), ``Omega_ij ~ N(0,1)`` (``i < j``) symmetric, zero diagonal; nu > 2 (§9.2)."""
    positive(L, "L", integer=True)
    require(nu > 2, "nu", f"must be > 2 (semicircle edge) so that K is positive definite, got {nu}")
    rng = np.random.default_rng(seed)
    G = np.triu(rng.standard_normal((L, L)), 1)
    K = nu * np.eye(L) + (G + G.T) / np.sqrt(L)
    require(np.linalg.eigvalsh(K).min() > 0, "nu", "K is not positive definite for this draw")
    return Teacher(K)


def kappa(eigs, M: int, lam: float) -> float:
    """Effective regularisation kappa: root of lam = kappa (1 - tr[Sigma (Sigma + kappa)^{-1}] / M) (§9.2).

    ``lam = 0``: kappa = 0 when p < M, else the root of tr[Sigma (Sigma + kappa)^{-1}] / M = 1."""
    eigs = np.asarray(eigs, float)
    positive(M, "M", integer=True)
    require(lam >= 0, "lam", f"must be >= 0, got {lam}")
    df1 = lambda k: np.sum(eigs / (eigs + k)) / M  # noqa: E731
    if lam == 0:
        if eigs.size < M:
            return 0.0
        if eigs.size == M:
            return 0.0
        f = lambda lk: df1(np.exp(lk)) - 1.0  # noqa: E731
    else:
        f = lambda lk: np.exp(lk) * (1.0 - df1(np.exp(lk))) - lam  # noqa: E731
    lo, hi = np.log(1e-14), np.log(1e8 + lam * 10 + eigs.max() * 1e3)
    return float(np.exp(brentq(f, lo, hi, xtol=1e-14, rtol=1e-13, maxiter=500)))


def ridge_theory(Sigma, w, sigma2: float, M: int, lam: float, eig=None) -> dict:
    """Deterministic-equivalent test MSE and coupling error of per-site ridge (§9.2).

    E_test = (sigma^2 + b_pred) / (1 - df2/M);
    E||A - w*||^2 = b_par + tr[Sigma (Sigma + kappa)^-2] / M * E_test.
    ``eig``: optional precomputed ``np.linalg.eigh(Sigma)`` (reused across M and lambda)."""
    ev, Q = np.linalg.eigh(Sigma) if eig is None else eig
    wt = Q.T @ w
    k = kappa(ev, M, lam)
    df2 = np.sum(ev**2 / (ev + k) ** 2)
    require(df2 < M, "M", f"df2 = {df2:.3g} >= M = {M}: at the interpolation threshold (lam = 0, M = p)")
    b_pred = k**2 * np.sum(ev * wt**2 / (ev + k) ** 2)
    b_par = k**2 * np.sum(wt**2 / (ev + k) ** 2)
    e_test = (sigma2 + b_pred) / (1 - df2 / M)
    coup = b_par + np.sum(ev / (ev + k) ** 2) / M * e_test
    return {
        "kappa": k,
        "test_mse": float(e_test),
        "coupling_error": float(coup),
        "rel_coupling_error": float(coup / np.sum(w**2)),
    }


def isotropic_coupling_error(alpha: float, r: float, sigma2: float) -> float:
    """Closed form at Sigma = I, lam -> 0 (§9.2): sigma^2/(alpha-1) (alpha>1); r(1-alpha)+sigma^2 alpha/(1-alpha)."""
    positive(alpha, "alpha")
    require(alpha != 1, "alpha", "diverges at alpha = 1 (interpolation peak)")
    return sigma2 / (alpha - 1) if alpha > 1 else r * (1 - alpha) + sigma2 * alpha / (1 - alpha)


def lambda_opt(Sigma, w, sigma2: float, M: int, bounds=(-8.0, 2.0), eig=None) -> float:
    """argmin over lambda of E_test (scalar search on log10 lambda) (§9.2)."""
    eig = np.linalg.eigh(Sigma) if eig is None else eig
    f = lambda ll: ridge_theory(Sigma, w, sigma2, M, 10.0**ll, eig)["test_mse"]  # noqa: E731
    r = minimize_scalar(f, bounds=bounds, method="bounded", options={"xatol": 1e-4})
    return float(10.0**r.x)


def simulate_ridge(teacher: Teacher, sites, M: int, lam: float, reps: int, seed: int = 0) -> dict:
    """Sample x ~ N(0, K^-1) ``reps`` times, fit the exact ridge solution at each site of ``sites``.

    The test MSE of an estimate ``a`` is exact: ``sigma^2 + (a - w*)^T Sigma (a - w*)``.  Returns the
    mean and standard error (over sites x reps) of the relative coupling error
    ``||a - w*||^2 / ||w*||^2`` and of the test MSE, with the theory averaged over the same sites."""
    positive(reps, "reps", integer=True)
    rng = np.random.default_rng(seed)
    Lc = np.linalg.cholesky(np.linalg.inv(teacher.K))
    L = teacher.L
    per_site = [teacher.site(i) for i in sites]
    theo = np.array(
        [[th["rel_coupling_error"], th["test_mse"]] for th in (ridge_theory(S, w, s2, M, lam) for S, w, s2 in per_site)]
    )
    sims = []
    for _ in range(reps):
        X = rng.standard_normal((M, L)) @ Lc.T
        for i, (Sigma, w, s2) in zip(sites, per_site):
            rest = np.delete(np.arange(L), i)
            Z, y = X[:, rest], X[:, i]
            a = np.linalg.solve(Z.T @ Z / M + lam * np.eye(L - 1), Z.T @ y / M)
            d = a - w
            sims.append((d @ d / (w @ w), s2 + d @ Sigma @ d))
    sims = np.array(sims)
    n = len(sims)
    return {
        "rel_coupling_error": float(sims[:, 0].mean()),
        "rel_coupling_error_se": float(sims[:, 0].std(ddof=1) / np.sqrt(n)),
        "test_mse": float(sims[:, 1].mean()),
        "test_mse_se": float(sims[:, 1].std(ddof=1) / np.sqrt(n)),
        "theory_rel_coupling_error": float(theo[:, 0].mean()),
        "theory_test_mse": float(theo[:, 1].mean()),
    }


__all__ = [
    "Teacher",
    "gaussian_teacher",
    "kappa",
    "ridge_theory",
    "isotropic_coupling_error",
    "lambda_opt",
    "simulate_ridge",
]
