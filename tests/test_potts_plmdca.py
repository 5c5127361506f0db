"""Asymmetric plmDCA baseline (potts.md §7.1, §10.8)."""

import jax.numpy as jnp
import numpy as np

import bayes_attn  # noqa: F401
from bayes_attn.potts import fit_plmdca, plm_couplings, plm_logits


def test_logits_match_definition():
    rng = np.random.default_rng(0)
    L, C = 4, 3
    p = {"W": jnp.asarray(rng.normal(size=(L, L, C, C))), "h": jnp.asarray(rng.normal(size=(L, C)))}
    s = rng.integers(0, C, (6, L))
    z = np.asarray(plm_logits(p, s))
    for m in range(6):
        for i in range(L):
            ref = p["h"][i] + sum(p["W"][i, j][:, s[m, j]] for j in range(L) if j != i)
            np.testing.assert_allclose(z[m, i], ref, atol=1e-12)
    assert np.all(plm_couplings(p)[np.arange(L), np.arange(L)] == 0)


def test_fit_converges_and_gradient_is_small():
    s = np.random.default_rng(1).integers(0, 3, (200, 5))
    p, info = fit_plmdca(s, 3, lam_J=1e-2, max_iter=500, tol=1e-6)
    assert info.converged and info.grad_norm <= 1e-6
    # an early-stopped run is flagged, not hidden
    _, info2 = fit_plmdca(s, 3, lam_J=1e-2, max_iter=2, tol=1e-9)
    assert not info2.converged
