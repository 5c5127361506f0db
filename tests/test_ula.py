"""ULA (bayes_attn.inference._ula): its exact O(h) bias on a Gaussian, the step-size rule,
SBC at a small step, and the measured bias at two step sizes differing by 2x."""

import jax
import jax.numpy as jnp
import numpy as np
from test_mala import assert_moments, assert_uniform_ranks, gaussian_linear, run_chains, sbc_ranks

from bayes_attn.inference import _adapt, _ula


def ula_variance(S, h):
    """Exact stationary covariance of ULA on N(m, S): eigenvalues 1 / (lam (1 - h lam / 2))."""
    lam, Q = np.linalg.eigh(np.linalg.inv(S))
    return (Q / (lam * (1 - h * lam / 2))) @ Q.T


def test_stationary_law_is_the_biased_gaussian():
    logd, J, T, m, S = gaussian_linear(T=0.2, seed=1)
    lam = np.linalg.eigvalsh(np.linalg.inv(S)).max()
    h = 0.8 / lam  # large step: variance bias 1 / (1 - 0.4) = 1.67 in the stiffest direction
    x0 = jax.random.normal(jax.random.PRNGKey(1), (8, 3))
    pos, info = run_chains(_ula.build_kernel(), logd, x0, h, 8000, jax.random.PRNGKey(2))
    assert not bool(info.is_divergent.any())
    draws = np.asarray(pos[:, 1000:])
    assert_moments(draws, m, np.diag(ula_variance(S, h)))  # the mean is unbiased for Gaussians
    # and the bias is detected: the exact variance is rejected in the stiffest direction
    top = np.linalg.eigh(np.linalg.inv(S))[1][:, -1]
    proj = draws @ top
    assert proj.var() > 1.3 * top @ S @ top


def test_step_size_bias_halves_with_the_step():
    """Two steps h and h/2 (docs/samplers.md): the measured excess variance halves (O(h))."""
    logd, J, T, m, S = gaussian_linear(T=0.2, seed=1)
    lam = np.linalg.eigvalsh(np.linalg.inv(S)).max()
    top = np.linalg.eigh(np.linalg.inv(S))[1][:, -1]
    v_true = top @ S @ top
    excess = []
    for c in (0.8, 0.4):
        x0 = jax.random.normal(jax.random.PRNGKey(3), (8, 3))
        pos, _ = run_chains(_ula.build_kernel(), logd, x0, c / lam, 20000, jax.random.PRNGKey(4))
        excess.append(np.asarray(pos[:, 2000:]) @ top)
    b1, b2 = (x.var() / v_true - 1 for x in excess)
    # exact values 1/(1-c/2) - 1: 0.667 and 0.25; ratio 2.67 (-> 2 as h -> 0)
    assert abs(b1 - 2 / 3) < 0.12 and abs(b2 - 0.25) < 0.06
    assert b1 > 2 * b2


def test_step_rule_uses_lambda_max():
    logd, J, T, m, S = gaussian_linear(d=4, P=3, T=0.05, seed=2)
    lam = _adapt.max_curvature(logd, jnp.zeros(4), jax.random.PRNGKey(0), iters=100)
    np.testing.assert_allclose(lam, np.linalg.eigvalsh(np.linalg.inv(S)).max(), rtol=1e-6)


def test_simulation_based_calibration_small_step():
    """At h = 0.05 / lambda_max the variance bias (< 3%) is below what 400 replicates resolve."""
    assert_uniform_ranks(sbc_ranks(_ula, 0.05, thin=40, burn=400))
