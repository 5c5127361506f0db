"""Bayesian factored attention: a NumPyro pseudo-posterior sampled with NUTS (potts.md §11.1).

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
"""

from __future__ import annotations

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.flatten_util import ravel_pytree
from numpyro.infer import MCMC, NUTS

from .._errors import positive, require
from ._attention import fa_logits
from ._gauge import gauge_fields, gauge_fix, true_couplings, zero_sum
from ._model import pseudo_nll


def _params(z, L):
    A = jnp.zeros((L, L), z["V"].dtype).at[~np.eye(L, dtype=bool)].set(z["A_off"])
    p = {"A": A[None], "V": z["V"][None]}
    if "b" in z:
        p["b"] = z["b"]
    return p


def pl_model(s, L: int, C: int, omega: float = 1.0, scale_A: float = 1.0, scale_V: float = 1.0,
             scale_b: float | None = None):
    """NumPyro model of the pseudo-posterior (§11.1); fields when ``scale_b`` is given."""
    z = {"A_off": numpyro.sample("A_off", dist.Normal(0.0, scale_A).expand([L * (L - 1)]).to_event(1)),
         "V": numpyro.sample("V", dist.Normal(0.0, scale_V).expand([C, C]).to_event(2))}
    if scale_b is not None:
        z["b"] = numpyro.sample("b", dist.Normal(0.0, scale_b).expand([L, C]).to_event(2))
    M = s.shape[0]
    numpyro.factor("pl", -omega * M * L * pseudo_nll(fa_logits(_params(z, L), s), s))


def map_lambda(M: int, L: int, omega: float = 1.0, scale: float = 1.0) -> float:
    """The L2 weight of the MAP in the M*L-averaged normalisation of §4.1: 1 / (2 s^2 omega M L)."""
    return 1.0 / (2.0 * scale ** 2 * omega * M * L)


def _z_of(params, L):
    A = np.asarray(params["A"]).reshape(L, L)
    z = {"A_off": jnp.asarray(A[~np.eye(L, dtype=bool)]), "V": jnp.asarray(np.asarray(params["V"]).reshape(
        params["V"].shape[-2:]))}
    if "b" in params:
        z["b"] = jnp.asarray(params["b"])
    return z


def _curvature_and_score_covariance(s, params, scale_A, scale_V, scale_b):
    """H = minus the Hessian of the log pseudo-posterior (omega = 1) at ``params`` and J = the
    sum over sequences of the outer products of the centred per-sequence scores, in the flat
    coordinates of ``ravel_pytree`` (A_off, V, b)."""
    s = jnp.asarray(s)
    M, L = s.shape
    z0 = _z_of(params, L)
    flat, unravel = ravel_pytree(z0)

    def ell(x, sm):                     # log PL of one sequence
        return -L * pseudo_nll(fa_logits(_params(unravel(x), L), sm[None]), sm[None])

    def log_prior(x):
        z = unravel(x)
        lp = -0.5 * jnp.sum(z["A_off"] ** 2) / scale_A ** 2 - 0.5 * jnp.sum(z["V"] ** 2) / scale_V ** 2
        if "b" in z:
            lp = lp - 0.5 * jnp.sum(z["b"] ** 2) / scale_b ** 2
        return lp

    G = jax.jit(jax.vmap(jax.grad(ell), in_axes=(None, 0)))(flat, s)          # (M, p) per-sequence scores
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


def curvature_adjustment(s, params, *, scale_A: float = 1.0, scale_V: float = 1.0,
                         scale_b: float | None = None) -> dict:
    """The open-faced sandwich adjustment of pseudo-posterior draws (docs/potts_choices.md).

    At omega = 1 the pseudo-posterior is asymptotically N(theta_hat, H^-1), while the sampling
    covariance of theta_hat is the sandwich H^-1 J H^-1 (composite likelihood: the L conditionals
    of a sequence are not independent).  The affine map theta -> theta_hat + Omega (theta - theta_hat)
    with Omega = H^-1 J^(1/2) H^(1/2) (symmetric square roots) carries the first covariance onto
    the second exactly: Omega H^-1 Omega^T = H^-1 J H^-1, for every direction rather than on average
    (which is all a scalar omega can do).  Directions without data (gauge, the (c, 1/c) scale of
    A, V) have J = 0: the adjusted draws have no spread in the null space of Omega (H^-1/2 null(J)),
    which to first order does not move the gauged couplings.

    Returns {"mode": flat theta_hat, "Omega": (p, p), "eigs": eigenvalues of H^-1 J}."""
    flat, _, (w, Q), Jm = _curvature_and_score_covariance(s, params, scale_A, scale_V, scale_b)
    wj, Qj = np.linalg.eigh(0.5 * (Jm + Jm.T))
    J12 = (Qj * np.sqrt(np.clip(wj, 0.0, None))) @ Qj.T
    H12 = (Q * np.sqrt(w)) @ Q.T
    Hinv = (Q / w) @ Q.T
    Hm12 = Q / np.sqrt(w)
    return {"mode": flat, "Omega": Hinv @ J12 @ H12, "eigs": np.linalg.eigvalsh(Hm12.T @ Jm @ Hm12)}


def _gauged(A, V, b=None):
    """K0 (..., L, L, C, C) in the zero-sum gauge of the symmetrised A_ij V_ab, and the gauged fields."""
    K = np.einsum("...ij,...ab->...ijab", A, V)
    K0 = zero_sum(0.5 * (K + np.swapaxes(np.swapaxes(K, -4, -3), -2, -1)))
    if b is None:
        return K0, None
    lead = A.shape[:-2]
    h0 = np.stack([gauge_fields(bb, kk) for bb, kk in zip(b.reshape(-1, *b.shape[-2:]),
                                                           K.reshape(-1, *K.shape[-4:]))])
    return K0, h0.reshape(*lead, *h0.shape[-2:])


def adjust_draws(out: dict, adjustment: dict) -> dict:
    """Apply :func:`curvature_adjustment` to the omega = 1 draws of :meth:`PseudoPosterior.run`: returns a
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
    sign = np.where(a_off @ th[:n_a] < 0, -1.0, 1.0)[..., None]        # the (c, 1/c) symmetry at c = -1
    parts = [sign * a_off, sign * v]
    if "b" in out:
        parts.append(out["b"].reshape(*lead, -1))
    x = np.concatenate(parts, -1)
    require(x.shape[-1] == th.size, "adjustment", f"has {th.size} parameters, the draws {x.shape[-1]}")
    y = th + (x - th) @ Om.T
    A = np.zeros((*lead, L, L))
    A[..., off] = y[..., :n_a]
    V = y[..., n_a:n_a + n_v].reshape(out["V"].shape)
    b = y[..., n_a + n_v:].reshape(out["b"].shape) if "b" in out else None
    K0, h0 = _gauged(A, V, b)
    res = dict(out, A=A, V=V, K0=K0, adjusted=True)
    if b is not None:
        res.update(b=b, h0=h0)
    return res


class PseudoPosterior:
    """NUTS on the pseudo-posterior, compiled once for a data shape (the data travel as arguments),
    so repeated calibration runs on new data sets reuse it."""

    def __init__(self, L: int, C: int, *, omega: float = 1.0, scale_A: float = 1.0, scale_V: float = 1.0,
                 scale_b: float | None = None, chains: int = 2, warmup: int = 300, draws: int = 300,
                 max_tree_depth: int = 8, progress_bar: bool = False):
        positive(omega, "omega")
        self.L, self.C, self.omega, self.scales = L, C, float(omega), (scale_A, scale_V, scale_b)
        kernel = NUTS(pl_model, target_accept_prob=0.85, max_tree_depth=max_tree_depth)
        self.mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=chains,
                         chain_method="sequential", progress_bar=progress_bar)

    def run(self, key, s, init=None, omega: float | None = None) -> dict:
        """Draws of A, V, (b), gauge-fixed couplings K0 (chains, draws, L, L, C, C), gauged fields h0,
        R-hat / ESS of the off-diagonal K0 entries, divergences."""
        s = jnp.asarray(s)
        L, C = self.L, self.C
        omega = self.omega if omega is None else float(omega)
        chains = self.mcmc.num_chains
        init_params = None
        if init is not None:
            init_params = _z_of(init, L)
            if chains > 1:
                init_params = jax.tree.map(lambda x: jnp.broadcast_to(x, (chains, *x.shape)), init_params)
        self.mcmc.run(key, s, L, C, omega, *self.scales, init_params=init_params)
        post = self.mcmc.get_samples(group_by_chain=True)
        nc, nd = post["V"].shape[:2]
        A = np.zeros((nc, nd, L, L))
        A[..., ~np.eye(L, dtype=bool)] = np.asarray(post["A_off"])
        V = np.asarray(post["V"])
        b = np.asarray(post["b"]) if "b" in post else None
        K0, h0 = _gauged(A, V, b)
        out = {"A": A, "V": V, "K0": K0, "omega": omega, "pseudo_posterior": True}
        if b is not None:
            out.update(b=b, h0=h0)
        flat = K0[:, :, ~np.eye(L, dtype=bool)].reshape(nc, nd, -1)
        out["rhat_K_max"] = float(np.nanmax(np.asarray(az.rhat(flat), float))) if nc > 1 else float("nan")
        out["ess_K_min"] = float(np.nanmin(np.asarray(az.ess(flat), float)))
        out["divergences"] = int(np.asarray(self.mcmc.get_extra_fields()["diverging"]).sum())
        return out


def sample_pseudo_posterior(key, s, C: int, *, omega: float = 1.0, scale_A: float = 1.0, scale_V: float = 1.0,
                            scale_b: float | None = None, chains: int = 2, warmup: int = 300, draws: int = 300,
                            init=None, progress_bar: bool = False) -> dict:
    """One NUTS run on the pseudo-posterior (see :class:`PseudoPosterior`)."""
    L = np.shape(s)[1]
    return PseudoPosterior(L, C, omega=omega, scale_A=scale_A, scale_V=scale_V, scale_b=scale_b, chains=chains,
                           warmup=warmup, draws=draws, progress_bar=progress_bar).run(key, s, init)


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
    return {"covered": int(inside.sum()), "n": int(inside.size), "rate": r, "n_dof": n_dof,
            "binom_se": float(np.sqrt(r * (1 - r) / n_dof)) if n_dof else float("nan")}


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
    return {"covered": cov, "n": n, "rate": rate, "n_dof": n_dof, "binom_se": float(np.sqrt(rate * (1 - rate) / n_dof)),
            "between_sets_se": between, "datasets": len(results)}


__all__ = ["pl_model", "map_lambda", "sandwich_omega", "curvature_adjustment", "adjust_draws", "PseudoPosterior", "sample_pseudo_posterior", "coverage",
           "pool_coverage"]
