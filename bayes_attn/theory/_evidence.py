"""Log evidence of the network as a function of its attention (docs/evidence.md §1–§3).

Two estimates of ``ln p(y | X, attention)`` (the marginal likelihood of the training labels with every
weight integrated out):

* **saddle point** (:func:`saddle_log_evidence`, :func:`log_evidence`): Laplace's method on the exact
  order-parameter integral (docs/theory.md eq. (5.2b)) around the saddle point ``U*`` of the action
  (eq. (4.4c)), with every O(1) term written out (docs/evidence.md eq. (E1))::

      ln Z_saddle = -A(U*)/2                                   (action term, O(N) and O(P))
                    - sum_l (p_l+1)/2 ln det U*_l - ln U*_a     (measure term, eq. (5.2c))
                    + sum (N p/2) ln(N/(2 sigma^2)) - ln Gamma_p(N/2)   (Wishart normaliser, eq. (5.2c))
                    + (d/2) ln 2 pi - (1/2) ln det(H/2)         (Gaussian fluctuations, Laplace)
                    - (P/2) ln 2 pi                              (Gaussian likelihood constant, eq. (5.1a))

  ``H`` is the Hessian of the action ``A`` with respect to ``(U_a, upper-triangular entries of U_1..U_L)``
  (the coordinates in which (5.2b) is a density), ``d = 1 + sum_l p_l(p_l+1)/2``.  The relative error is
  O(1/N) (docs/evidence.md §1).
* **exact** (:func:`exact_log_evidence`): the integral of ``exp`` of :func:`._exact.exact_log_density` over
  the width-scaled sites ``xi``, by importance sampling *(project choice, docs/evidence.md §2)*: a defensive
  mixture proposal ``(1-eps) N(m, S) + eps t_nu(m, s^2 S)`` at the mode ``m`` of the exact density with
  ``S = (-Hessian)^-1``, antithetic pairs ``m +- delta``, and the Laplace Gaussian at ``m`` as a control
  variate of known integral: ``Z = Z_L (1 + E_q[(p/Z_L - N)/q])``.  The Monte Carlo standard error is
  reported (pairs are the i.i.d. units).  No MCMC: theory never imports :mod:`bayes_attn.inference`.

Gradients with respect to the attention (docs/evidence.md §3), for any differentiable ``theta -> Phi``:
:func:`saddle_attention_grad` (envelope theorem: ``-dE(U*_1; Phi(theta))/dtheta / 2`` at fixed ``U*``,
the gradient of the leading term ``-A(U*)/2``) and :func:`fisher_attention_grad` (Fisher's identity:
the posterior mean of ``-dE(U_1; Phi(theta))/dtheta / 2`` under (5.2b), self-normalised importance
sampling on the draws of :func:`exact_log_evidence`).

Widths, variances and ``T`` enter as a traced :class:`~bayes_attn.network.Hyper`, so one compiled
program serves every width.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from .. import linalg
from ..linalg import (
    energy_derivatives,
    pack_symmetric,
    symmetric_to_packed_matrix,
    tril_size,
    unpack_symmetric,
)
from ._action import entropy
from ._exact import OrderParameterLayout, check_widths, exact_log_density, wishart_log_normalizer
from ._solver import Solution, solve, training_kernel_data


# ---- saddle point ------------------------------------------------------------------------------------------------
class SaddleEvidence(NamedTuple):
    """Terms of the saddle-point log evidence (module docstring, docs/evidence.md eq. (E1))."""

    log_evidence: float
    action_term: float  # -A(U*)/2
    measure_term: float  # -sum_l (p_l+1)/2 ln det U*_l - ln U*_a
    wishart_normalizer: float  # sum (N p/2) ln(N/(2 sigma^2)) - ln Gamma_p(N/2)
    laplace_term: float  # (d/2) ln 2 pi - (1/2) ln det(H/2)
    gaussian_constant: float  # -(P/2) ln 2 pi
    dimension: int
    hessian_min_eig: float  # of H (positive at a minimum)
    solution: Solution

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self._fields if k != "solution"}
        d["solver_ok"] = bool(self.solution.status.ok)
        return d


def _sizes(hyper) -> list[int]:
    return [hyper.p(l) for l in range(1, hyper.n_layers + 1)]


def _entropy_z(z, hyper):
    return entropy(z[0], unpack_symmetric(z[1:], _sizes(hyper)), hyper)


@jax.jit
def _laplace_parts(z, hyper, kd, y):
    """``(A, ln det(H/2), min eig H, measure term)`` at ``z = (U_a, packed u)``; ``kd`` None: no data."""
    sizes = _sizes(hyper)
    U_a, Us = z[0], unpack_symmetric(z[1:], sizes)
    H = jax.hessian(_entropy_z)(z, hyper)
    A = entropy(U_a, Us, hyper)
    if kd is not None:
        p1 = sizes[0]
        E, _, H_E = energy_derivatives(Us[0], kd, y, hyper.temperature)
        D = jnp.asarray(symmetric_to_packed_matrix(p1))
        m1 = D.shape[1]
        H = H.at[1 : 1 + m1, 1 : 1 + m1].add(D.T @ H_E.reshape(p1 * p1, p1 * p1) @ D)
        A = A + E
    H = (H + H.T) / 2
    w = jnp.linalg.eigvalsh(H)
    logdet_half = jnp.sum(jnp.log(w)) - H.shape[0] * jnp.log(2.0)
    measure = -jnp.log(U_a)
    for U in Us:
        measure = measure - 0.5 * (U.shape[0] + 1) * jnp.linalg.slogdet(U)[1]
    return A, logdet_half, w.min(), measure


def saddle_log_evidence(spec, phi, y, *, solution: Solution | None = None, data: bool = True) -> SaddleEvidence:
    """Saddle-point log evidence ``ln Z_saddle`` of the training labels (docs/evidence.md eq. (E1)).

    ``phi``: ``(P, N0, n_pi)`` of the training inputs; ``solution``: a :func:`solve` result to reuse
    (default: solved here).  ``data=False`` evaluates the prior alone (no energy, no ``-(P/2) ln 2 pi``):
    Laplace's approximation of the integral of the normalised prior chain, which is ``1 + O(1/N)``.
    """
    hyper = spec.hyper()
    y = jnp.asarray(y, dtype=jnp.float64)
    if data:
        phi = jnp.asarray(phi, dtype=jnp.float64)
        kd, y_kd = training_kernel_data(phi, y)  # path space where it is smaller (docs/theory.md §4.10)
        sol = solution if solution is not None else solve(spec, phi, y)
        U_a, Us = sol.U_a, sol.Us
    else:
        from ._action import gp_order_parameters

        kd, y_kd, sol = None, y, solution
        U_a, Us = gp_order_parameters(spec)  # the prior's saddle point (eq. (4.6a))
    z = jnp.concatenate([jnp.atleast_1d(jnp.asarray(U_a, dtype=jnp.float64)), pack_symmetric(Us)])
    A, logdet_half, min_eig, measure = (float(v) for v in _laplace_parts(z, hyper, kd, y_kd))
    d = int(z.shape[0])
    wn = float(wishart_log_normalizer(_sizes(hyper), hyper))
    lap = 0.5 * d * math.log(2 * math.pi) - 0.5 * logdet_half
    gconst = -0.5 * y.shape[0] * math.log(2 * math.pi) if data else 0.0
    total = -0.5 * A + measure + wn + lap + gconst
    return SaddleEvidence(total, -0.5 * A, measure, wn, lap, gconst, d, min_eig, sol)


def log_evidence(task, spec, *, solution: Solution | None = None) -> SaddleEvidence:
    """Saddle-point log evidence of ``task``'s training labels for network ``spec`` (:func:`saddle_log_evidence`)."""
    return saddle_log_evidence(spec, task.phi("train", spec), task.y_train, solution=solution)


# ---- exact, by importance sampling ----------------------------------------------------------------------------
class ExactEvidence(NamedTuple):
    """Exact finite-N log evidence by importance sampling (module docstring, docs/evidence.md §2)."""

    log_evidence: float
    mcse: float  # Monte Carlo standard error of log_evidence
    laplace_at_mode: float  # ln Z_L - (P/2) ln 2 pi: the Laplace value at the exact mode (control variate)
    ess: float  # Kish effective sample size of the plain importance weights
    n_draws: int
    mode: np.ndarray  # mode of the exact density in the flat sites xi
    draws: np.ndarray  # (n_draws, d) flat sites (for :func:`fisher_attention_grad`)
    log_weights: np.ndarray  # (n_draws,) ln p(xi) - ln q(xi); pairs are rows (2k, 2k+1)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("log_evidence", "mcse", "laplace_at_mode", "ess", "n_draws")}


def _unflatten(layout: OrderParameterLayout, z):
    out, k = {"xi_a": z[0]}, 1
    for l, p in enumerate(layout.sizes, start=1):
        out[f"xi_{l}"] = z[k : k + tril_size(p)]
        k += tril_size(p)
    return out


def _flatten(xi: dict):
    return jnp.concatenate([jnp.atleast_1d(xi["xi_a"])] + [xi[k] for k in sorted(xi) if k != "xi_a"])


@partial(jax.jit, static_argnums=0)
def _logp(layout, z, hyper, kd, y):
    return exact_log_density(layout, _unflatten(layout, z), hyper, kd, y)


@partial(jax.jit, static_argnums=0)
def _logp_newton(layout, z, hyper, kd, y):
    f = lambda v: exact_log_density(layout, _unflatten(layout, v), hyper, kd, y)  # noqa: E731
    return f(z), jax.grad(f)(z), jax.hessian(f)(z)


@partial(jax.jit, static_argnums=0)
def _logp_batch(layout, Z, hyper, kd, y):
    return jax.vmap(lambda z: exact_log_density(layout, _unflatten(layout, z), hyper, kd, y))(Z)


def find_mode(layout, z0, hyper, kd, y, max_iter: int = 100, tol: float = 1e-10):
    """Mode of the exact log-density in the flat sites (damped Newton); returns ``(z, logp, Hessian)``."""
    z = jnp.asarray(z0, dtype=jnp.float64)
    f, g, H = _logp_newton(layout, z, hyper, kd, y)
    for _ in range(max_iter):
        w, V = np.linalg.eigh(-np.asarray(H))
        shift = max(0.0, -w.min() + 1e-8 * max(abs(w).max(), 1.0))
        step = V @ ((V.T @ np.asarray(g)) / (w + shift))
        step *= min(1.0, 2.0 / max(np.abs(step).max(), 1e-300))
        t = 1.0
        for _ in range(50):
            f_new = float(_logp(layout, z + t * step, hyper, kd, y))
            if np.isfinite(f_new) and f_new >= float(f) + 1e-4 * t * float(np.dot(g, step)) - 1e-13 * abs(float(f)):
                break
            t *= 0.5
        z = z + t * step
        f, g, H = _logp_newton(layout, z, hyper, kd, y)
        if float(np.max(np.abs(np.asarray(g)))) <= tol * max(1.0, float(np.max(np.abs(np.asarray(z))))):
            break
    return z, float(f), np.asarray(H)


def _log_mvn_t(R2, logdet, d, df=None):
    """ln density of N(0, S) (``df`` None) or t_df(0, S) at squared Mahalanobis ``R2``; ``logdet = ln det S``."""
    if df is None:
        return -0.5 * d * math.log(2 * math.pi) - 0.5 * logdet - 0.5 * R2
    return (
        gammaln(0.5 * (df + d))
        - gammaln(0.5 * df)
        - 0.5 * d * math.log(df * math.pi)
        - 0.5 * logdet
        - 0.5 * (df + d) * np.log1p(R2 / df)
    )


def _draw_pairs(rng, mu, C, n_pairs, mixture, df, scale):
    """Antithetic pairs ``mu +- C e`` from ``(1-mixture) N(mu, C C^T) + mixture t_df(mu, scale^2 C C^T)``."""
    d = mu.size
    e = rng.standard_normal((n_pairs, d))
    is_t = rng.random(n_pairs) < mixture
    e[is_t] *= scale * np.sqrt(df / rng.chisquare(df, size=int(is_t.sum())))[:, None]
    E = np.concatenate([e, -e], axis=1).reshape(2 * n_pairs, d)  # rows 2k, 2k+1: a pair
    r2 = np.sum(E * E, axis=1)
    logdet = 2.0 * np.sum(np.log(np.diag(C)))
    log_q = np.logaddexp(
        math.log1p(-mixture) + _log_mvn_t(r2, logdet, d),
        math.log(mixture) + _log_mvn_t(r2 / scale**2, logdet + 2 * d * math.log(scale), d, df),
    )
    return mu[None, :] + E @ C.T, log_q


def exact_log_evidence(
    task,
    spec,
    *,
    n_pairs: int = 4000,
    seed: int = 0,
    mixture: float = 0.1,
    df: float = 4.0,
    scale: float = 1.5,
    adapt_rounds: int = 0,
    chunk: int = 512,
    solution: Solution | None = None,
    progress: bool = False,
    phi=None,
    y=None,
) -> ExactEvidence:
    """Exact finite-N ``ln p(y)`` (docs/theory.md eq. (5.2b) integrated; docs/evidence.md §2) with its MCSE.

    Proposal *(project choice)*: start from the Laplace Gaussian at the mode ``m`` of the exact density (found by
    Newton from ``U*``); ``adapt_rounds`` rounds of ``min(n_pairs, 2000)`` pairs refit its centre and covariance
    to the weighted draws (weights truncated at ``sqrt(n)`` times their mean); the final ``n_pairs`` antithetic
    pairs come from ``(1-mixture) N + mixture t_df`` (scale ``scale``) of the fitted moments.  The estimate is
    ``Z = Z_L (1 + mean[(p/Z_L - N_L)/q])`` with ``N_L`` the Laplace Gaussian at ``m`` (control variate of known
    integral); its MCSE uses pairs as the i.i.d. units.  Needs ``N_l >= p_l`` (:func:`._exact.check_widths`).
    ``phi``/``y`` override ``task``'s training data (then ``task`` may be None).
    """
    from .._errors import positive, require

    check_widths(spec)
    positive(n_pairs, "evidence.n_pairs", integer=True)
    require(0.0 < mixture < 1.0, "evidence.mixture", f"must be in (0, 1), got {mixture}")
    phi = task.phi("train", spec) if phi is None else phi
    y = task.y_train if y is None else y
    phi, y = jnp.asarray(phi, dtype=jnp.float64), jnp.asarray(y, dtype=jnp.float64)
    hyper, layout = spec.hyper(), OrderParameterLayout.from_heads(spec.heads)
    P = y.shape[0]
    sol = solution if solution is not None else solve(spec, phi, y)
    kd, y = training_kernel_data(phi, y)  # path space where it is smaller (docs/theory.md §4.10)
    z0 = _flatten(layout.pack(sol.U_a, sol.Us, hyper))
    m, f_m, H = find_mode(layout, z0, hyper, kd, y)
    m = np.asarray(m)
    d = m.size
    C_L = np.linalg.cholesky(np.linalg.inv(-H))
    logdet_L = 2.0 * np.sum(np.log(np.diag(C_L)))
    ln_ZL = f_m + 0.5 * d * math.log(2 * math.pi) + 0.5 * logdet_L
    rng = np.random.default_rng(seed)

    def logp_of(Z, desc):
        out, it = [], range(0, Z.shape[0], chunk)
        if progress:
            from tqdm.auto import tqdm

            it = tqdm(it, desc=desc, leave=False)
        for i in it:
            out.append(np.asarray(_logp_batch(layout, jnp.asarray(Z[i : i + chunk]), hyper, kd, y)))
        out = np.concatenate(out)
        return np.where(np.isfinite(out), out, -np.inf)

    mu, C = m, C_L
    for r in range(adapt_rounds):
        Z, log_q = _draw_pairs(rng, mu, C, min(n_pairs, 2000), mixture, df, scale)
        lw = logp_of(Z, f"adapt {r + 1} N={spec.widths[0]}") - log_q
        w = np.exp(lw - lw.max())
        w = np.minimum(w, w.mean() * math.sqrt(w.size))
        w /= w.sum()
        mu_new = w @ Z
        S = (Z - mu_new).T @ ((Z - mu_new) * w[:, None]) + 1e-10 * np.eye(d)
        try:
            C = np.linalg.cholesky(S)
            mu = mu_new
        except np.linalg.LinAlgError:
            break
    Z, log_q = _draw_pairs(rng, mu, C, n_pairs, mixture, df, scale)
    logp = logp_of(Z, f"exact evidence N={spec.widths[0]}")
    delta = np.linalg.solve(C_L, (Z - m[None, :]).T).T
    r2 = np.sum(delta * delta, axis=1)
    log_n = _log_mvn_t(r2, logdet_L, d)
    rho = logp - f_m + 0.5 * r2  # ln[p / (Z_L N_L)]
    v = np.exp(log_n - log_q) * np.expm1(rho)  # (p/Z_L - N_L) / q
    u = 0.5 * (v[0::2] + v[1::2])
    est = 1.0 + u.mean()
    if not est > 0:
        raise FloatingPointError("exact evidence: the control-variate estimate is not positive; raise n_pairs")
    log_w = logp - log_q
    w = np.exp(log_w - log_w.max())
    return ExactEvidence(
        ln_ZL + math.log(est) - 0.5 * P * math.log(2 * math.pi),
        float(u.std(ddof=1) / math.sqrt(n_pairs) / est),
        ln_ZL - 0.5 * P * math.log(2 * math.pi),
        float(w.sum() ** 2 / (w * w).sum()),
        2 * n_pairs,
        m,
        Z,
        log_w,
    )


# ---- gradients with respect to the attention ------------------------------------------------------------------
def _neg_half_energy(phi, U, y, T):
    return -0.5 * linalg.energy(linalg.kernel_matrix(phi, phi, U), y, T)


_dphi = jax.jit(jax.grad(_neg_half_energy))


def saddle_attention_grad(phi_fn, theta, spec, y, solution: Solution):
    """Gradient of the leading saddle evidence ``-A(U*(theta); theta)/2`` (docs/evidence.md eq. (E3)).

    Envelope theorem: ``U*`` minimises ``A``, and only the energy depends on the attention, so the gradient is
    ``-(1/2) dE(U*_1; Phi(theta))/dtheta`` at fixed ``U*``.  ``phi_fn(theta) -> Phi`` must be differentiable.
    """
    y = jnp.asarray(y, dtype=jnp.float64)
    U1 = jnp.asarray(solution.Us[0])
    return jax.grad(lambda t: _neg_half_energy(phi_fn(t), U1, y, spec.temperature))(theta)


@partial(jax.jit, static_argnums=0)
def _dphi_batch(layout, Z, hyper, phi, y):
    def one(z):
        _, Us, _ = layout.unpack(_unflatten(layout, z), hyper)
        return _dphi(phi, Us[0], y, hyper.temperature)

    return jax.lax.map(one, Z)


def fisher_attention_grad(phi_fn, theta, spec, y, exact: ExactEvidence, *, direction=None, chunk: int = 64):
    """Exact gradient of ``ln p(y)`` w.r.t. the attention by Fisher's identity (docs/evidence.md eq. (E4)).

    ``d ln p(y)/dtheta = E_{U|y}[-(1/2) dE(U_1; Phi(theta))/dtheta]``, the posterior mean estimated by
    self-normalised importance sampling on ``exact``'s draws (taken at the same ``theta``).  Returns the
    gradient (a pytree like ``theta``); with a ``direction`` (same pytree) also the directional derivative
    and its MCSE (ratio estimator over antithetic pairs) as ``(grad, value, mcse)``.
    """
    hyper, layout = spec.hyper(), OrderParameterLayout.from_heads(spec.heads)
    y = jnp.asarray(y, dtype=jnp.float64)
    phi, vjp = jax.vjp(phi_fn, theta)
    lw = np.asarray(exact.log_weights)
    w = np.exp(lw - lw.max())
    w = np.where(np.isfinite(w), w, 0.0)
    G = jnp.zeros_like(phi)
    dirs = []
    dphi_dir = jax.jvp(phi_fn, (theta,), (direction,))[1] if direction is not None else None
    for i in range(0, w.size, chunk):
        wi = w[i : i + chunk]
        g = _dphi_batch(layout, jnp.asarray(exact.draws[i : i + chunk]), hyper, phi, y)  # (c, P, N0, n)
        g = jnp.where((jnp.asarray(wi) > 0)[:, None, None, None], g, 0.0)  # draws of zero weight (U overflow)
        G = G + jnp.einsum("c,cmip->mip", jnp.asarray(wi), g)
        if dphi_dir is not None:
            dirs.append(np.asarray(jnp.einsum("cmip,mip->c", g, dphi_dir)))
    grad = vjp(G / w.sum())[0]
    if direction is None:
        return grad
    gd = np.concatenate(dirs)
    a, b = 0.5 * (w * gd)[0::2] + 0.5 * (w * gd)[1::2], 0.5 * (w[0::2] + w[1::2])
    est = a.sum() / b.sum()
    mcse = math.sqrt(np.sum((a - est * b) ** 2)) / b.sum()
    return grad, float(est), float(mcse)


__all__ = [
    "SaddleEvidence",
    "saddle_log_evidence",
    "log_evidence",
    "ExactEvidence",
    "exact_log_evidence",
    "find_mode",
    "saddle_attention_grad",
    "fisher_attention_grad",
]
