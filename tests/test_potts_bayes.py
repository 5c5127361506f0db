"""NumPyro pseudo-posterior of factored attention (potts.md §11.1)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer.util import log_density

import bayes_attn  # noqa: F401
from bayes_attn.potts import (FAConfig, Potts, coverage, exact_distribution, fit_lbfgs, generate_couplings, map_lambda,
                              pl_model, sample_pseudo_posterior)


def _data(M=400, seed=0):
    J, U = generate_couplings("G1", 3, 3, seed=seed)
    m = Potts(2.0 * J, U, 1.0)
    st, p = exact_distribution(m)
    return m, st[np.random.default_rng(seed).choice(len(p), M, p=p)]


def test_map_is_ridge_pl():
    """The gradient of the pseudo-posterior log density vanishes at the ridge-PL fit with
    lam = 1 / (2 s^2 omega M L) (MAP = trained factored attention)."""
    m, s = _data()
    omega, scale = 0.5, 0.7
    lam = map_lambda(len(s), 3, omega, scale)
    p, info = fit_lbfgs(jax.random.PRNGKey(0), s, FAConfig(3, 3), lam, tol=1e-9)
    assert info.converged
    z = {"A_off": p["A"][0][~np.eye(3, dtype=bool)], "V": p["V"][0]}
    g = jax.grad(lambda z: log_density(pl_model, (jnp.asarray(s), 3, 3, omega, scale, scale), {}, z)[0])(z)
    scale_g = len(s) * 3 * omega
    assert max(float(jnp.abs(v).max()) for v in g.values()) < 1e-6 * scale_g
    g_far = jax.grad(lambda z: log_density(pl_model, (jnp.asarray(s), 3, 3, omega, scale, scale), {}, z)[0])(
        jax.tree.map(lambda x: 1.1 * x, z))
    assert max(float(jnp.abs(v).max()) for v in g_far.values()) > 1e-3


@pytest.mark.slow
def test_nuts_pseudo_posterior_runs_and_is_reported():
    m, s = _data(M=300)
    p, _ = fit_lbfgs(jax.random.PRNGKey(0), s, FAConfig(3, 3), map_lambda(300, 3))
    out = sample_pseudo_posterior(jax.random.PRNGKey(1), s, 3, chains=2, warmup=200, draws=200,
                                  init={"A": p["A"][0], "V": p["V"][0]})
    assert out["pseudo_posterior"] and out["omega"] == 1.0
    assert out["K0"].shape == (2, 200, 3, 3, 3, 3) and out["rhat_K_max"] < 1.1
    assert 0.0 <= coverage(out["K0"], m.beta, m.J, m.U) <= 1.0
