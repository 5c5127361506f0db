"""MALA (bayes_attn.inference.samplers.mala, blackjax's kernel) and the shared dual-averaging / curvature tools: exact on a
Gaussian linear model (moments within MCSE, SBC ranks), step-size adaptation, deep-model check."""

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from bayes_attn.inference.samplers import _adapt
from bayes_attn.inference.samplers import mala as _mala


def gaussian_linear(d=3, P=2, T=0.5, seed=0):
    """z ~ N(0, I), y ~ N(J z, T): log posterior, exact mean and covariance."""
    rng = np.random.default_rng(seed)
    J = jnp.asarray(rng.standard_normal((P, d)))
    y = jnp.asarray(rng.standard_normal(P))
    S = np.linalg.inv(np.eye(d) + np.asarray(J.T @ J) / T)
    logd = lambda z, y=y: -0.5 * jnp.sum((J @ z - y) ** 2) / T - 0.5 * z @ z
    return logd, J, T, S @ np.asarray(J.T @ y) / T, S


def run_chains(kernel, logd, x0s, h, n, key):
    """``(chains, n, d)`` positions and per-step infos, chains vmapped."""

    def chain(x0, k):
        def body(s, kk):
            s, info = kernel(kk, s, logd, h)
            return s, (s.position, info)

        return jax.lax.scan(body, _mala.init(x0, logd), jax.random.split(k, n))[1]

    return jax.jit(jax.vmap(chain))(x0s, jax.random.split(key, x0s.shape[0]))


def assert_moments(draws, mean, var, k=4.0):
    """``draws``: (chain, draw, d); mean and variance within ``k`` MCSE (ArviZ, autocorrelation-aware)."""
    draws = np.asarray(draws)
    se_m = np.asarray(az.mcse(draws, method="mean"))
    se_s = np.asarray(az.mcse(draws, method="sd"))
    assert np.all(np.abs(draws.mean((0, 1)) - mean) < k * se_m), (draws.mean((0, 1)), mean, se_m)
    sd = np.sqrt(var)
    assert np.all(np.abs(draws.std((0, 1)) - sd) < k * se_s), (draws.std((0, 1)), sd, se_s)


def sbc_ranks(module, step_factor, *, thin, burn, d=2, P=2, T=0.5, n_rep=400, n_keep=19):
    """Simulation-based calibration of a Langevin kernel on a Gaussian linear model.

    ``n_rep`` times: draw ``theta`` from the prior and ``y`` given it, run ``module``'s kernel
    (``init`` / ``build_kernel``) at ``h = step_factor / lambda_max`` for ``burn`` steps, then
    keep ``n_keep`` draws every ``thin`` steps; return the rank of ``theta`` among them per
    coordinate, ``(n_rep, d)``.  An exact sampler gives uniform ranks on ``0..n_keep``.
    """
    J = jnp.asarray(np.random.default_rng(5).standard_normal((P, d)))
    lam = np.linalg.eigvalsh(np.eye(d) + np.asarray(J.T @ J) / T).max()
    kernel = module.build_kernel()

    def one(key):
        k1, k2, k3, k4 = jax.random.split(key, 4)
        theta = jax.random.normal(k1, (d,))
        y = J @ theta + jnp.sqrt(T) * jax.random.normal(k2, (P,))
        logd = lambda z: -0.5 * jnp.sum((J @ z - y) ** 2) / T - 0.5 * z @ z

        def body(s, kk):
            s, _ = kernel(kk, s, logd, step_factor / lam)
            return s, s.position

        xs = jax.lax.scan(
            body, module.init(jax.random.normal(k3, (d,)), logd), jax.random.split(k4, burn + n_keep * thin)
        )[1]
        return jnp.sum(xs[burn + thin - 1 :: thin] < theta, axis=0)

    return np.asarray(jax.jit(jax.vmap(one))(jax.random.split(jax.random.PRNGKey(6), n_rep)))


def assert_uniform_ranks(ranks, n_keep=19):
    for j in range(ranks.shape[1]):
        assert stats.chisquare(np.bincount(ranks[:, j], minlength=n_keep + 1)).pvalue > 1e-3


class TestKernel:
    def test_gaussian_linear_moments(self):
        logd, J, T, m, S = gaussian_linear()
        lam = _adapt.max_curvature(logd, jnp.zeros(3), jax.random.PRNGKey(0))
        x0 = jax.random.normal(jax.random.PRNGKey(1), (8, 3))
        pos, info = run_chains(_mala.build_kernel(), logd, x0, 1.0 / lam, 6000, jax.random.PRNGKey(2))
        assert 0.3 < float(info.acceptance_rate.mean()) < 0.99
        assert not bool(_mala.is_divergent(info).any())
        assert_moments(pos[:, 1000:], m, np.diag(S))

    def test_exact_even_with_a_crude_step(self):
        # a step far beyond the ULA stability limit: acceptance is low but the law stays exact
        logd, J, T, m, S = gaussian_linear(seed=4)
        lam = _adapt.max_curvature(logd, jnp.zeros(3), jax.random.PRNGKey(0))
        x0 = jax.random.normal(jax.random.PRNGKey(1), (8, 3))
        pos, info = run_chains(_mala.build_kernel(), logd, x0, 1.5 / lam, 8000, jax.random.PRNGKey(3))
        assert_moments(pos[:, 1000:], m, np.diag(S))

    def test_simulation_based_calibration(self):
        assert_uniform_ranks(sbc_ranks(_mala, 1.0, thin=20, burn=200))


class TestDriverProgram:
    def test_program_draws_equal_blackjax_mala_by_hand(self):
        """Where both apply, our MALA program (warm-up then fixed step) is blackjax's MALA kernel:
        after warm-up, the driver's draws equal blackjax.mala run by hand from the same state,
        keys (``fold_in(chain_key, t)``) and step size."""
        import blackjax
        from conftest import random_task

        from bayes_attn.inference import SamplerConfig, build_model
        from bayes_attn.inference._runner import chain_keys
        from bayes_attn.inference.samplers import Settings
        from bayes_attn.inference.samplers._adapt import flat_logdensity

        task = random_task(P=5, Q=3, S=3, n0=3, heads=(2,), seed=4)
        spec = task.spec(width=3, temperature=0.3)
        model, args = build_model(task, spec, "collapsed")
        cfg = SamplerConfig(kind="mala", model="collapsed", chains=1, warmup=20, draws=15, seed=2)
        prog = _mala.program(model, Settings.from_config(cfg))
        keys, end_keys = chain_keys(cfg.seed, 1)
        carry = prog.init(keys[0], args)
        for t in range(cfg.warmup):
            carry = prog.step(jax.random.fold_in(keys[0], t), carry, args)[0]
        carry = prog.end_warmup(end_keys[0], carry, args)
        ours, hand = [], carry.state
        logd = flat_logdensity(model, args)[0]
        bj = blackjax.mala(logd, carry.step_size)
        for t in range(cfg.draws):
            key = jax.random.fold_in(keys[0], cfg.warmup + t)
            carry, _ = prog.step(key, carry, args)
            hand, _ = bj.step(key, hand)
            ours.append(carry.state.position)
            np.testing.assert_array_equal(np.asarray(carry.state.position), np.asarray(hand.position))
        assert len({float(p[0]) for p in ours}) > 3  # the chain moved


class TestAdaptation:
    def test_max_curvature_is_the_top_hessian_eigenvalue(self):
        logd, J, T, m, S = gaussian_linear(d=5, P=3)
        lam = _adapt.max_curvature(logd, jnp.ones(5), jax.random.PRNGKey(0), iters=100)
        np.testing.assert_allclose(lam, np.linalg.eigvalsh(np.linalg.inv(S)).max(), rtol=1e-6)

    def test_top_curvature_is_exact_up_to_iters_coordinates_and_the_power_iteration_beyond(self):
        logd, J, T, m, S = gaussian_linear(d=5, P=3)
        x, key = jnp.ones(5), jax.random.PRNGKey(0)
        exact = np.linalg.eigvalsh(np.linalg.inv(S)).max()
        np.testing.assert_allclose(_adapt.top_curvature(logd, x, key, iters=5), exact, rtol=1e-10)
        short = _adapt.top_curvature(logd, x, key, iters=4)  # 5 coordinates > 4: four power-iteration steps
        assert float(short) == float(_adapt.max_curvature(logd, x, key, iters=4)) and abs(short / exact - 1) > 1e-10
        # a negative curvature of larger magnitude limits the step as much: |lambda|_max = 6, not 1
        saddle = lambda z: 3.0 * z[0] ** 2 - 0.5 * z[1] ** 2  # noqa: E731
        np.testing.assert_allclose(_adapt.top_curvature(saddle, jnp.zeros(2), key, iters=30), 6.0, rtol=1e-12)

    def test_dual_averaging_reaches_target(self):
        logd, *_ = gaussian_linear(d=10, P=6, T=0.1, seed=7)
        kernel = _mala.build_kernel()
        da_init, da_update, da_final = _adapt.dual_averaging(0.574)

        def body(carry, k):
            s, da = carry
            s, info = kernel(k, s, logd, jnp.exp(da.log_step_size))
            return (s, da_update(da, info.acceptance_rate)), None

        (s, da), _ = jax.jit(
            lambda k: jax.lax.scan(
                body, (_mala.init(jnp.zeros(10), logd), da_init(jnp.asarray(1.0))), jax.random.split(k, 3000)
            )
        )(jax.random.PRNGKey(8))
        h = da_final(da)
        x0 = jax.random.normal(jax.random.PRNGKey(9), (4, 10))
        _, info = run_chains(kernel, logd, x0, h, 3000, jax.random.PRNGKey(10))
        assert abs(float(info.acceptance_rate[:, 500:].mean()) - 0.574) < 0.07


@pytest.mark.slow
def test_mala_agrees_with_nuts_on_deep_model():
    from conftest import random_task
    from test_gibbs import _assert_agree

    from bayes_attn.diagnostics import summarize
    from bayes_attn.inference import SamplerConfig, sample
    from bayes_attn.network import NetworkSpec

    task = random_task(P=8, Q=4, S=3, n0=4, heads=(2, 2), seed=3)
    spec = NetworkSpec(heads=task.heads, n0=task.n0, width=6, temperature=0.1, readout="last")
    ref = sample(
        task, spec, SamplerConfig(kind="nuts", model="collapsed", chains=2, warmup=500, draws=3000, progress_bar=False)
    )
    mala = sample(
        task,
        spec,
        SamplerConfig(
            kind="mala", model="collapsed", chains=2, warmup=2000, draws=40000, thinning=10, progress_bar=False
        ),
    )
    for dt in (ref, mala):
        assert summarize(dt).table["r_hat"].max() < 1.02
    _assert_agree(ref, mala)
