"""Bayesian factored attention: a NumPyro pseudo-posterior sampled with NUTS (potts.md §11.1).

    A_ij ~ N(0, s_A^2) (i != j; the masked diagonal is not a parameter),  V_ab ~ N(0, s_V^2),
    factor("pl", omega * log PL(A, V)),   log PL = -M L l_PL .

The MAP of this density is ridge-PL = trained FA-free with lam = 1 / (2 s^2 omega M L) for
both factors (:func:`map_lambda`).  The pseudo-likelihood is not a likelihood: with omega = 1
the pseudo-posterior is over-concentrated, so credible intervals are not calibrated.  How the
package reports it (project choice): every result carries ``omega`` and the flag
``pseudo_posterior=True``; :func:`coverage` measures the empirical coverage of the true
gauge-fixed couplings on synthetic data, the calibration step that must precede any
interpretation of intervals (choose omega < 1 until coverage matches the nominal level).
Convergence is diagnosed on gauge-invariant quantities (couplings K, the loss), never on raw
A, V (the (c, 1/c) scale symmetry makes them non-identifiable).
"""

from __future__ import annotations

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS

from .._errors import positive
from ._attention import fa_logits
from ._gauge import gauge_fix, offdiag, true_couplings, zero_sum
from ._model import pseudo_nll


def pl_model(s, L: int, C: int, omega: float = 1.0, scale_A: float = 1.0, scale_V: float = 1.0):
    """NumPyro model of the pseudo-posterior (§11.1)."""
    n_off = L * (L - 1)
    a = numpyro.sample("A_off", dist.Normal(0.0, scale_A).expand([n_off]).to_event(1))
    V = numpyro.sample("V", dist.Normal(0.0, scale_V).expand([C, C]).to_event(2))
    A = jnp.zeros((L, L)).at[~np.eye(L, dtype=bool)].set(a)
    params = {"A": A[None], "V": V[None]}
    M = s.shape[0]
    numpyro.factor("pl", -omega * M * L * pseudo_nll(fa_logits(params, s), s))


def map_lambda(M: int, L: int, omega: float = 1.0, scale: float = 1.0) -> float:
    """The L2 weight of the MAP in the M*L-averaged normalisation of §4.1: 1 / (2 s^2 omega M L)."""
    return 1.0 / (2.0 * scale ** 2 * omega * M * L)


def sample_pseudo_posterior(key, s, C: int, *, omega: float = 1.0, scale_A: float = 1.0, scale_V: float = 1.0,
                            chains: int = 2, warmup: int = 300, draws: int = 300, init=None,
                            progress_bar: bool = False) -> dict:
    """NUTS on the pseudo-posterior; returns draws of A (chains, draws, L, L), V, gauge-fixed
    couplings K0 (chains, draws, L, L, C, C) and R-hat / ESS of the off-diagonal K0 entries.

    ``init``: optional dict {"A": (L, L), "V": (C, C)} (e.g. the MAP) for every chain."""
    s = jnp.asarray(s)
    M, L = s.shape
    positive(omega, "omega")
    kernel = NUTS(pl_model, target_accept_prob=0.85)
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=chains, chain_method="sequential",
                progress_bar=progress_bar)
    init_params = None
    if init is not None:
        A0 = np.asarray(init["A"]).reshape(L, L)
        one = {"A_off": jnp.asarray(A0[~np.eye(L, dtype=bool)]), "V": jnp.asarray(np.asarray(init["V"]).reshape(C, C))}
        init_params = jax.tree.map(lambda x: jnp.broadcast_to(x, (chains, *x.shape)), one)
    mcmc.run(key, s, L, C, omega, scale_A, scale_V, init_params=init_params)
    post = mcmc.get_samples(group_by_chain=True)
    nc, nd = post["V"].shape[:2]
    A = np.zeros((nc, nd, L, L))
    A[..., ~np.eye(L, dtype=bool)] = np.asarray(post["A_off"])
    V = np.asarray(post["V"])
    K = np.einsum("cdij,cdab->cdijab", A, V)
    K0 = zero_sum(0.5 * (K + K.transpose(0, 1, 3, 2, 5, 4)))
    flat = K0[:, :, ~np.eye(L, dtype=bool)].reshape(nc, nd, -1)
    rhat = np.asarray(az.rhat(flat), float)
    ess = np.asarray(az.ess(flat), float)
    div = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    return {"A": A, "V": V, "K0": K0, "rhat_K_max": float(np.nanmax(rhat)), "ess_K_min": float(np.nanmin(ess)),
            "divergences": div, "omega": omega, "pseudo_posterior": True}


def coverage(K0_draws, beta: float, J, U, level: float = 0.9) -> float:
    """Fraction of true gauge-fixed couplings (i != j) inside the central ``level`` credible
    intervals of ``K0_draws`` (..., L, L, C, C) flattened over the leading draw axes."""
    L = np.asarray(J).shape[0]
    d = np.asarray(K0_draws).reshape(-1, *np.asarray(K0_draws).shape[-4:])
    T = offdiag(gauge_fix(true_couplings(beta, J, U)))
    lo, hi = np.quantile(d[:, ~np.eye(L, dtype=bool)], [(1 - level) / 2, (1 + level) / 2], axis=0)
    return float(np.mean((T >= lo) & (T <= hi)))


__all__ = ["pl_model", "map_lambda", "sample_pseudo_posterior", "coverage"]
