"""ULA (bayes_attn.inference.samplers.ula, blackjax's Euler–Maruyama step): its exact O(h) bias on a
Gaussian, the step-size rule of the driver program, SBC at a small step, the measured bias at two
step sizes differing by 2x, and the same draws as blackjax's full-batch SGLD."""

import jax
import jax.numpy as jnp
import numpy as np
from test_mala import assert_moments, assert_uniform_ranks, gaussian_linear, run_chains, sbc_ranks

from bayes_attn.inference.samplers import ula as _ula


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


def test_driver_step_rule_is_factor_over_lambda_max():
    """The ULA program sets ``h = ula_step_factor / lambda_max`` at the end of warm-up, with ``lambda_max``
    the largest |eigenvalue| of the potential's Hessian at the chain's position (dense eigensolver here;
    early in warm-up the posterior can be non-convex there, and a large negative curvature limits the
    Euler step as much as a positive one)."""
    from conftest import random_task

    from bayes_attn.inference import SamplerConfig, build_model
    from bayes_attn.inference.samplers import Settings
    from bayes_attn.inference.samplers._adapt import flat_logdensity

    task = random_task(P=5, Q=3, S=3, n0=3, heads=(2,), seed=3)
    spec = task.spec(width=3, temperature=0.2)
    model, args = build_model(task, spec, "collapsed")
    cfg = SamplerConfig(kind="ula", model="collapsed", ula_step_factor=0.3)
    prog = _ula.program(model, Settings.from_config(cfg))
    # compiled, as the runner runs them (op by op, these few calls compiled some 370 small programs)
    carry = jax.jit(prog.init)(jax.random.PRNGKey(0), args)
    carry = jax.jit(prog.step)(jax.random.PRNGKey(1), carry, args)[0]
    out = jax.jit(prog.end_warmup)(jax.random.PRNGKey(2), carry, args)
    logd, _, _ = flat_logdensity(model, args)
    lam = np.abs(np.linalg.eigvalsh(-np.asarray(jax.jit(jax.hessian(logd))(out.state.position)))).max()
    np.testing.assert_allclose(float(out.step_size), 0.3 / lam, rtol=1e-4)
    assert float(out.step_size) != float(carry.step_size)


def test_same_draws_as_blackjax_sgld():
    """Where both apply (full-batch gradient, temperature 1) our ULA kernel and blackjax's SGLD kernel
    are the same Euler–Maruyama chain: identical positions from the same keys."""
    import blackjax

    logd, J, T, m, S = gaussian_linear(T=0.2, seed=1)
    h = 0.01
    keys = jax.random.split(jax.random.PRNGKey(7), 50)
    ours = _ula.build_kernel()
    sgld = blackjax.sgld.build_kernel()
    grad = jax.grad(logd)
    s, x = _ula.init(jnp.ones(3), logd), jnp.ones(3)
    for k in keys:
        s, _ = ours(k, s, logd, h)
        x = sgld(k, x, lambda p, _: grad(p), None, h)
    np.testing.assert_allclose(np.asarray(s.position), np.asarray(x), rtol=1e-12, atol=1e-14)


def test_simulation_based_calibration_small_step():
    """At h = 0.05 / lambda_max the variance bias (< 3%) is below what 400 replicates resolve."""
    assert_uniform_ranks(sbc_ranks(_ula, 0.05, thin=40, burn=400))


def test_switching_kernel_adjusted_is_exact_mala():
    """The warm-up half of the switching kernel (``adjusted``, traced) is MALA: at the large step where ULA's
    stiffest variance is 1.67x too large (first test), its draws have the exact posterior moments."""
    logd, J, T, m, S = gaussian_linear(T=0.2, seed=1)
    lam = np.linalg.eigvalsh(np.linalg.inv(S)).max()
    switching = _ula.build_switching_kernel()
    kernel = lambda k, s, lp, h: switching(k, s, lp, h, jnp.asarray(True))  # noqa: E731
    x0 = jax.random.normal(jax.random.PRNGKey(1), (8, 3))
    pos, info = run_chains(kernel, logd, x0, 0.8 / lam, 8000, jax.random.PRNGKey(2))
    assert 0.2 < float(info.acceptance_rate.mean()) < 1.0  # proposals were rejected: the acceptance step ran
    assert_moments(pos[:, 1000:], m, np.diag(S))
