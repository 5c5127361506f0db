"""Bayesian factored attention: the NumPyro pseudo-posterior and its mathematics (potts.md §11.1).

    A_ij ~ N(0, s_A^2) (i != j; the masked diagonal is not a parameter),  V_ab ~ N(0, s_V^2),
    b_i(a) ~ N(0, s_b^2) (optional per-site fields),
    factor("pl", omega * log PL(A, V, b)),   log PL = -M L l_PL .

What it is and is not.  The pseudo-likelihood is a product of the L conditionals of each
sequence, not the probability of the sequence; the pseudo-posterior is therefore **not** the
Bayesian posterior of the Potts model (that would need the partition function Z(J, U, h)).  Its
mode is ridge-PL = trained factored attention with lam = 1 / (2 s^2 omega M L) (:func:`map_lambda`);
at omega = 1 its spread is that of a likelihood whose terms were independent, and the L
conditionals of one sequence are not, so its credible intervals are not calibrated.
:func:`sandwich_omega` chooses omega by the magnitude adjustment of composite likelihoods: with
H the curvature of the log pseudo-posterior at the mode and J the covariance of the per-sequence
scores, omega = 1 / mean(nonzero eigenvalues of H^-1 J), so that omega H matches the sandwich
precision H J^-1 H on average.  Whether the intervals then cover the truth is an empirical
question: :func:`coverage` measures it on synthetic data with known couplings (tests and
``examples/potts_bayes.py``).  Convergence is diagnosed on gauge-invariant quantities (the
gauge-fixed couplings K0), never on raw A, V (the (c, 1/c) scale symmetry).

This module holds the model (:func:`pl_model`) and the mathematics around it: the MAP weight, the
sandwich adjustments, coverage.  Sampling it is the runner's work: :mod:`bayes_attn.potts_bayes` (a layer
above the inference and diagnostics layers) runs NUTS through the chunked runner and judges the draws with
``bayes_attn.diagnostics.summarize``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.flatten_util import ravel_pytree

from .._errors import require
from ._attention import fa_logits
from ._gauge import gauge_fields, gauge_fix, symmetrise, true_couplings, zero_sum
from ._model import pseudo_nll
from ._params import FactoredParams, as_params


def pl_params(z, L: int) -> FactoredParams:
    """The single-head record of the sites ``z`` = {A_off, V, (b)} of :func:`pl_model` (the inverse of
    :func:`pl_sites`); traceable."""
    A = jnp.zeros((L, L), z["V"].dtype).at[~np.eye(L, dtype=bool)].set(z["A_off"])
    return FactoredParams(A[None], z["V"][None], z.get("b"))


def pl_model(s, L: int, C: int, omega=1.0, scale_A=1.0, scale_V=1.0, scale_b: float | None = None, weights=None):
    """NumPyro model of the pseudo-posterior (§11.1); fields when ``scale_b`` is given.  ``weights`` (M,):
    sequence weights, ``log PL = sum_m w_m sum_i log p(s_mi | s_m,-i)`` (docs/potts.md (11.1a)); integer counts
    give exactly the pseudo-posterior of the sequences repeated that many times."""
    z = {
        "A_off": numpyro.sample("A_off", dist.Normal(0.0, scale_A).expand([L * (L - 1)]).to_event(1)),
        "V": numpyro.sample("V", dist.Normal(0.0, scale_V).expand([C, C]).to_event(2)),
    }
    if scale_b is not None:
        z["b"] = numpyro.sample("b", dist.Normal(0.0, scale_b).expand([L, C]).to_event(2))
    n = s.shape[0] if weights is None else jnp.sum(weights)  # pseudo_nll is the (weighted) mean over sequences
    numpyro.factor("pl", -omega * n * L * pseudo_nll(fa_logits(pl_params(z, L), s), s, weights))


def map_lambda(M: int, L: int, omega: float = 1.0, scale: float = 1.0) -> float:
    """The L2 weight of the MAP in the M*L-averaged normalisation of §4.1: 1 / (2 s^2 omega M L)."""
    return 1.0 / (2.0 * scale**2 * omega * M * L)


def pl_sites(params, L: int) -> dict:
    """The sites {A_off, V, (b)} of :func:`pl_model` at a single-head :class:`FactoredParams` record (a start
    of the chains, or the point of the sandwich adjustments)."""
    params = as_params(params)
    A = np.asarray(params.A).reshape(L, L)
    z = {
        "A_off": jnp.asarray(A[~np.eye(L, dtype=bool)]),
        "V": jnp.asarray(np.asarray(params.V).reshape(np.shape(params.V)[-2:])),
    }
    if params.b is not None:
        z["b"] = jnp.asarray(params.b)
    return z


def _curvature_and_score_covariance(s, params, scale_A, scale_V, scale_b):
    """H = minus the Hessian of the log pseudo-posterior (omega = 1) at ``params`` and J = the
    sum over sequences of the outer products of the centred per-sequence scores, in the flat
    coordinates of ``ravel_pytree`` (A_off, V, b)."""
    s = jnp.asarray(s)
    M, L = s.shape
    z0 = pl_sites(params, L)
    flat, unravel = ravel_pytree(z0)

    def ell(x, sm):  # log PL of one sequence
        return -L * pseudo_nll(fa_logits(pl_params(unravel(x), L), sm[None]), sm[None])

    def log_prior(x):
        z = unravel(x)
        lp = -0.5 * jnp.sum(z["A_off"] ** 2) / scale_A**2 - 0.5 * jnp.sum(z["V"] ** 2) / scale_V**2
        if "b" in z:
            lp = lp - 0.5 * jnp.sum(z["b"] ** 2) / scale_b**2
        return lp

    G = jax.jit(jax.vmap(jax.grad(ell), in_axes=(None, 0)))(flat, s)  # (M, p) per-sequence scores
    Gc = np.asarray(G - G.mean(0))
    Jm = Gc.T @ Gc
    total = lambda x: jnp.sum(jax.vmap(ell, in_axes=(None, 0))(x, s)) + log_prior(x)  # noqa: E731
    hvp = lambda v: jax.jvp(jax.grad(total), (flat,), (v,))[1]  # noqa: E731
    H = -np.asarray(jax.jit(lambda: jax.lax.map(hvp, jnp.eye(flat.size, dtype=flat.dtype), batch_size=16))())
    H = 0.5 * (H + H.T)
    w, Q = np.linalg.eigh(H)
    require(w.min() > 0, "params", "the log pseudo-posterior is not concave there (not a mode?)")
    return np.asarray(flat), unravel, (w, Q), Jm


def sandwich_omega(s, params, *, scale_A: float = 1.0, scale_V: float = 1.0, scale_b: float | None = None) -> dict:
    """Magnitude adjustment of the pseudo-likelihood at ``params`` (the MAP of omega = 1, single head).

    Returns {"omega", "eigs_mean", "rank"}: omega = 1 / mean of the eigenvalues of H^-1 J that are
    nonzero (J vanishes along the gauge directions, which carry no data)."""
    _, _, (w, Q), Jm = _curvature_and_score_covariance(s, params, scale_A, scale_V, scale_b)
    Hm12 = Q / np.sqrt(w)
    eig = np.linalg.eigvalsh(Hm12.T @ Jm @ Hm12)
    nz = eig[eig > 1e-6 * eig.max()]
    return {"omega": float(1.0 / nz.mean()), "eigs_mean": float(nz.mean()), "rank": int(nz.size)}


def curvature_adjustment(
    s, params, *, scale_A: float = 1.0, scale_V: float = 1.0, scale_b: float | None = None
) -> dict:
    """The open-faced sandwich adjustment of pseudo-posterior draws (docs/potts_choices.md).

    At omega = 1 the pseudo-posterior is asymptotically N(theta_hat, H^-1), while the sampling
    covariance of theta_hat is the sandwich H^-1 J H^-1 (composite likelihood: the L conditionals
    of a sequence are not independent).  The affine map theta -> theta_hat + Omega (theta - theta_hat)
    with Omega = H^-1 J^(1/2) H^(1/2) (symmetric square roots) carries the first covariance onto
    the second exactly: Omega H^-1 Omega^T = H^-1 J H^-1, for every direction rather than on average
    (which is all a scalar omega can do).  Directions without data (gauge, the (c, 1/c) scale of
    A, V) have J = 0: the adjusted draws have no spread in the null space of Omega (H^-1/2 null(J)),
    which to first order does not move the gauged couplings.

    Returns {"mode": flat theta_hat, "Omega": (p, p), "eigs": eigenvalues of H^-1 J, "covariance": H^-1} (the
    Laplace covariance of the omega = 1 pseudo-posterior: a metric for its NUTS runs, docs/potts.md (11.1d))."""
    flat, _, (w, Q), Jm = _curvature_and_score_covariance(s, params, scale_A, scale_V, scale_b)
    wj, Qj = np.linalg.eigh(0.5 * (Jm + Jm.T))
    J12 = (Qj * np.sqrt(np.clip(wj, 0.0, None))) @ Qj.T
    H12 = (Q * np.sqrt(w)) @ Q.T
    Hinv = (Q / w) @ Q.T
    Hm12 = Q / np.sqrt(w)
    return {
        "mode": flat,
        "Omega": Hinv @ J12 @ H12,
        "eigs": np.linalg.eigvalsh(Hm12.T @ Jm @ Hm12),
        "covariance": 0.5 * (Hinv + Hinv.T),
    }


def _gauged(A, V, b=None):
    """K0 (..., L, L, C, C) in the zero-sum gauge of the symmetrised A_ij V_ab, and the gauged fields."""
    K = np.einsum("...ij,...ab->...ijab", A, V)
    K0 = zero_sum(0.5 * (K + np.swapaxes(np.swapaxes(K, -4, -3), -2, -1)))
    if b is None:
        return K0, None
    lead = A.shape[:-2]
    h0 = np.stack([gauge_fields(bb, kk) for bb, kk in zip(b.reshape(-1, *b.shape[-2:]), K.reshape(-1, *K.shape[-4:]))])
    return K0, h0.reshape(*lead, *h0.shape[-2:])


def gauged_couplings(A, V, b=None):
    """One draw's gauge-invariant quantities, traceable (JAX): ``(K0, h0)`` with K0 (L, L, C, C) the zero-sum
    gauge of the symmetrised A_ij V_ab (A (L, L) with a zero diagonal) and h0 (L, C) the fields in the gauge
    that goes with it (:func:`gauge_fields`; ``None`` without fields).  What :func:`_gauged` computes for
    arrays of draws."""
    K = jnp.einsum("ij,ab->ijab", A, V)
    return zero_sum(symmetrise(K)), (None if b is None else gauge_fields(b, K))


def adjust_draws(out: dict, adjustment: dict) -> dict:
    """Apply :func:`curvature_adjustment` to the omega = 1 draws of ``bayes_attn.potts_bayes.PseudoPosterior.run``:
    returns a
    copy of ``out`` whose A, V, (b), K0, (h0) are the adjusted draws, with ``adjusted = True``.

    A draw in the mirror mode (-A, -V) (same couplings, far from theta_hat in these coordinates) is
    flipped onto theta_hat's side before the affine map.  ``rhat_K_max`` / ``ess_K_min`` are those of
    the unadjusted chain (the map is affine, so mixing is the chain's)."""
    require(float(out["omega"]) == 1.0, "adjustment", f"applies to omega = 1 draws, these have omega = {out['omega']}")
    L = out["A"].shape[-1]
    off = ~np.eye(L, dtype=bool)
    lead = out["V"].shape[:2]
    th, Om = adjustment["mode"], adjustment["Omega"]
    n_a, n_v = int(off.sum()), out["V"].shape[-1] * out["V"].shape[-2]
    a_off = out["A"][..., off].reshape(*lead, -1)
    v = out["V"].reshape(*lead, -1)
    sign = np.where(a_off @ th[:n_a] < 0, -1.0, 1.0)[..., None]  # the (c, 1/c) symmetry at c = -1
    parts = [sign * a_off, sign * v]
    if "b" in out:
        parts.append(out["b"].reshape(*lead, -1))
    x = np.concatenate(parts, -1)
    require(x.shape[-1] == th.size, "adjustment", f"has {th.size} parameters, the draws {x.shape[-1]}")
    y = th + (x - th) @ Om.T
    A = np.zeros((*lead, L, L))
    A[..., off] = y[..., :n_a]
    V = y[..., n_a : n_a + n_v].reshape(out["V"].shape)
    b = y[..., n_a + n_v :].reshape(out["b"].shape) if "b" in out else None
    K0, h0 = _gauged(A, V, b)
    res = dict(out, A=A, V=V, K0=K0, adjusted=True)
    if b is not None:
        res.update(b=b, h0=h0)
    return res


def coverage(K0_draws, beta: float, J, U, level: float = 0.9) -> dict:
    """Coverage of the true gauge-fixed couplings by the central ``level`` credible intervals of
    ``K0_draws`` (..., L, L, C, C): entries i < j (the symmetrised tensor repeats j > i).

    Returns {"covered", "n", "rate", "binom_se", "n_dof"}: ``binom_se`` = sqrt(r (1 - r) / n_dof)
    counts (C-1)^2 free entries per pair (the zero-sum gauge leaves those), so it does not
    pretend the C^2 entries of a pair are independent."""
    J = np.asarray(J)
    L, C = J.shape[0], np.asarray(U).shape[0]
    d = np.asarray(K0_draws).reshape(-1, L, L, C, C)
    T = gauge_fix(true_couplings(beta, J, U))
    iu = np.triu_indices(L, 1)
    lo, hi = np.quantile(d[:, iu[0], iu[1]], [(1 - level) / 2, (1 + level) / 2], axis=0)
    inside = (T[iu] >= lo) & (T[iu] <= hi)
    n_dof = iu[0].size * (C - 1) ** 2
    r = float(inside.mean())
    return {
        "covered": int(inside.sum()),
        "n": int(inside.size),
        "rate": r,
        "n_dof": n_dof,
        "binom_se": float(np.sqrt(r * (1 - r) / n_dof)) if n_dof else float("nan"),
    }


def pool_coverage(results) -> dict:
    """Pool :func:`coverage` results of independent data sets.

    Besides the binomial s.e. (which treats the entries as independent), ``between_sets_se`` is
    the standard error of the mean of the per-set rates: the entries of one data set share one
    posterior and one data set and move together, so with few sets this is the honest error."""
    n = sum(r["n"] for r in results)
    cov = sum(r["covered"] for r in results)
    n_dof = sum(r["n_dof"] for r in results)
    rate = cov / n
    rates = np.array([r["rate"] for r in results])
    between = float(rates.std(ddof=1) / np.sqrt(rates.size)) if rates.size > 1 else float("nan")
    return {
        "covered": cov,
        "n": n,
        "rate": rate,
        "n_dof": n_dof,
        "binom_se": float(np.sqrt(rate * (1 - rate) / n_dof)),
        "between_sets_se": between,
        "datasets": len(results),
    }


__all__ = [
    "pl_model",
    "pl_sites",
    "pl_params",
    "map_lambda",
    "sandwich_omega",
    "curvature_adjustment",
    "adjust_draws",
    "gauged_couplings",
    "coverage",
    "pool_coverage",
]
