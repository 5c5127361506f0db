"""Exact blocked Gibbs (bayes_attn.inference.samplers.gibbs): structure identities, exact conditional
draws (closed-form posterior, SBC), invariance of the full sweep (Geweke), agreement with NUTS."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_task
from scipy import stats

from bayes_attn.inference import build_model
from bayes_attn.inference.samplers import gibbs as g
from bayes_attn.linalg import apply_kernel
from bayes_attn.network import (
    NetworkSpec,
    apply_layer,
    backward_vectors,
    effective_weights,
    forward_paths,
    path_forward,
    project_input,
)


def _setup(heads=(2, 3), width=(3, 4, 5), variances=(1.3, 0.7, 1.1, 0.9), T=0.1, P=5, seed=0):
    task = random_task(P=P, Q=3, S=3, n0=4, heads=heads, seed=seed)
    spec = NetworkSpec(
        heads=task.heads, n0=task.n0, width=list(width), variances=list(variances), temperature=T, readout="last"
    )
    model, args = build_model(task, spec, "weights")
    rng = np.random.default_rng(seed)
    z = {k: jnp.asarray(rng.standard_normal(s)) for k, s in model.site_shapes().items()}
    return task, spec, (model, args), z


def _weights(spec, z):
    s = np.sqrt(spec.variances)
    return s[0] * z["z_V0"], [s[l + 1] * z[f"z_V{l + 1}"] for l in range(spec.n_layers)], s[-1] * z["z_a"]


class TestStructure:
    def test_path_forward_is_forward_paths(self):
        _, spec, built, z = _setup()
        V0, vals, a = _weights(spec, z)
        xpi = built[1].xpi_train
        f1 = path_forward(spec.heads, xpi, V0, vals, a)
        f2 = forward_paths(xpi, V0, effective_weights(vals, a))
        np.testing.assert_allclose(f1, f2, rtol=1e-12, atol=1e-14)

    @pytest.mark.parametrize("heads,width", [((2, 3), (3, 4, 5)), ((3,), (4, 2)), ((2, 1, 2), (2, 3, 2, 4))])
    def test_block_grams_equal_jacobian_grams(self, heads, width):
        _, spec, built, z = _setup(heads=heads, width=width, variances=(1.3,) + (0.8,) * len(heads) + (1.2,))
        model, args = built
        xpi = args.xpi_train

        def f_of(zz):
            V0, vals, a = _weights(spec, zz)
            return path_forward(spec.heads, xpi, V0, vals, a)

        J = jax.jit(jax.jacrev(f_of))(z)  # compiled: op by op, ~60-130 small programs per case
        V0, vals, a = _weights(spec, z)
        bs = backward_vectors(spec.heads, vals, a)
        gram = lambda name: J[name].reshape(xpi.shape[0], -1) @ J[name].reshape(xpi.shape[0], -1).T
        np.testing.assert_allclose(
            apply_kernel(args.kernels.train, spec.n_paths * bs[0] @ bs[0].T), gram("z_V0"), rtol=1e-10, atol=1e-13
        )
        Z = project_input(V0, xpi)
        for l in range(spec.n_layers):
            np.testing.assert_allclose(
                g.layer_gram(spec.heads, l, spec.sigma2_layers[l], Z, bs[l + 1]),
                gram(f"z_V{l + 1}"),
                rtol=1e-10,
                atol=1e-13,
            )
            Z = apply_layer(spec.heads, l, vals[l], Z)
        np.testing.assert_allclose(g.readout_gram(spec.sigma2_readout, Z), gram("z_a"), rtol=1e-10, atol=1e-13)


def _linear_problem(d=4, P=3, T=0.3, seed=1):
    rng = np.random.default_rng(seed)
    J = jnp.asarray(rng.standard_normal((P, d)))
    y = jnp.asarray(rng.standard_normal(P))
    S = np.linalg.inv(np.eye(d) + J.T @ J / T)
    return J, y, T, S @ np.asarray(J.T @ y) / T, S


class TestMatheron:
    def test_closed_form_posterior(self):
        J, y, T, m, S = _linear_problem()
        n = 20000
        draw = jax.jit(jax.vmap(lambda k: g.matheron(k, lambda z: J @ z, (J.shape[1],), J @ J.T, y, T)[0]))
        zs = np.asarray(draw(jax.random.split(jax.random.PRNGKey(0), n)))
        sd = np.sqrt(np.diag(S))
        assert np.all(np.abs(zs.mean(0) - m) < 4 * sd / np.sqrt(n))  # iid draws: MCSE = sd / sqrt(n)
        # sample variance of iid normals: sd(var_hat) = var sqrt(2 / (n - 1))
        assert np.all(np.abs(zs.var(0) - np.diag(S)) < 4 * np.diag(S) * np.sqrt(2 / (n - 1)))
        off = np.cov(zs.T)[0, 1]
        assert abs(off - S[0, 1]) < 4 * np.sqrt((S[0, 0] * S[1, 1] + S[0, 1] ** 2) / n)

    def test_simulation_based_calibration(self):
        d, P, T, n_rep, n_post = 3, 2, 0.5, 1000, 19
        J = jnp.asarray(np.random.default_rng(2).standard_normal((P, d)))

        def one(key):
            k1, k2, k3 = jax.random.split(key, 3)
            theta = jax.random.normal(k1, (d,))
            y = J @ theta + jnp.sqrt(T) * jax.random.normal(k2, (P,))
            post = jax.vmap(lambda k: g.matheron(k, lambda z: J @ z, (d,), J @ J.T, y, T)[0])(
                jax.random.split(k3, n_post)
            )
            return jnp.sum(post < theta, axis=0)  # rank in 0..n_post

        ranks = np.asarray(jax.jit(jax.vmap(one))(jax.random.split(jax.random.PRNGKey(3), n_rep)))
        for j in range(d):
            counts = np.bincount(ranks[:, j], minlength=n_post + 1)
            assert stats.chisquare(counts).pvalue > 1e-3

    def test_sweep_noise_is_one_draw_cut_into_disjoint_pieces(self):
        """Every block's ``z0`` and ``eps`` noise and every scale move's normal are disjoint pieces of one standard
        normal draw, used whole (nothing shared between blocks, nothing left over), and the uniforms are one draw."""
        from bayes_attn.inference.samplers._adapt import std_normal

        shapes = {"z_V0": (3, 4), "z_V1": (2, 5, 5), "z_a": (5,)}
        key = jax.random.PRNGKey(11)
        blocks, xi, u = g.sweep_noise(key, shapes, 7, 2, jnp.float64)
        assert [b[0].shape for b in blocks] == list(shapes.values()) and all(b[1].shape == (7,) for b in blocks)
        k_n, k_u = jax.random.split(key)
        flat = np.concatenate([np.concatenate([np.ravel(z0), e]) for z0, e in blocks] + [np.asarray(xi)])
        np.testing.assert_array_equal(flat, std_normal(k_n, (12 + 7 + 50 + 7 + 5 + 7 + 2,), jnp.float64))
        np.testing.assert_array_equal(u, jax.random.uniform(k_u, (2,), jnp.float64))


class TestSweep:
    def test_scale_move_keeps_prior_invariant(self):
        # without data the conditional of the pair is the prior: the move must preserve N(0, I)
        n, dA, dB = 4000, 3, 6
        keys = jax.random.split(jax.random.PRNGKey(4), n)

        def one(k):
            k1, k2, k3 = jax.random.split(k, 3)
            zA, zB = jax.random.normal(k1, (dA,)), jax.random.normal(k2, (dB,))
            A, B, ok = g.scale_move(k3, zA, zB)
            return jnp.sum(A * A), jnp.sum(B * B), ok

        a2, b2, ok = (np.asarray(v) for v in jax.jit(jax.vmap(one))(keys))
        assert ok.mean() > 0.5
        assert abs(a2.mean() - dA) < 4 * np.sqrt(2 * dA / n)  # chi-square(dA) mean and sd
        assert abs(b2.mean() - dB) < 4 * np.sqrt(2 * dB / n)
        assert stats.kstest(a2, stats.chi2(dA).cdf).pvalue > 1e-3

    def test_sweep_preserves_the_posterior_geweke(self):
        """theta ~ prior, y ~ p(y | theta), theta' = sweep_y(theta): theta' ~ prior exactly."""
        _, spec, (model, args), _ = _setup(heads=(2, 2), width=(3, 2, 3), variances=(1.0, 1.0, 1.0, 1.0), T=0.2, P=4)
        kernel = g.build_kernel(spec.heads)
        shapes = model.site_shapes()
        xpi = args.xpi_train

        def f_of(z):
            return path_forward(spec.heads, xpi, *_weights(spec, z))

        def one(key):
            keys = jax.random.split(key, len(shapes) + 2)
            z = {k: jax.random.normal(kk, s) for kk, (k, s) in zip(keys, shapes.items())}
            f = f_of(z)
            y = f + jnp.sqrt(spec.temperature) * jax.random.normal(keys[-2], f.shape)
            state = g.init(z, spec.heads, args._replace(y=y))
            new, _ = kernel(keys[-1], state, args._replace(y=y))
            U = lambda zz: jnp.sum(effective_weights(_weights(spec, zz)[1], _weights(spec, zz)[2]) ** 2)
            return jnp.stack([f[0], f_of(new.position)[0], U(z), U(new.position)])

        out = np.asarray(jax.jit(jax.vmap(one))(jax.random.split(jax.random.PRNGKey(5), 4000)))
        n = out.shape[0]
        for before, after in ((0, 1), (2, 3)):
            for fn in (lambda x: x, lambda x: x**2):
                a, b = fn(out[:, before]), fn(out[:, after])
                se = np.sqrt((a.var() + b.var()) / n)  # conservative (ignores positive correlation)
                assert abs(a.mean() - b.mean()) < 4 * se


@pytest.mark.slow
def test_gibbs_agrees_with_nuts_on_deep_model():
    """Predictor mean/variance of Gibbs (RB) vs a long collapsed-NUTS run, within MCSE."""
    from bayes_attn.diagnostics import summarize
    from bayes_attn.inference import SamplerConfig, sample

    task = random_task(P=8, Q=4, S=3, n0=4, heads=(2, 2), seed=3)
    spec = NetworkSpec(heads=task.heads, n0=task.n0, width=6, temperature=0.1, readout="last")
    ref = sample(
        task, spec, SamplerConfig(kind="nuts", model="collapsed", chains=2, warmup=500, draws=3000, progress_bar=False)
    )
    gib = sample(
        task, spec, SamplerConfig(kind="gibbs", model="collapsed", chains=2, warmup=200, draws=3000, progress_bar=False)
    )
    for dt in (ref, gib):
        assert summarize(dt).table["r_hat"].max() < 1.02
    _assert_agree(ref, gib)


def _assert_agree(ref, other, k=4.0):
    """Mean within k combined MCSE; variance within k combined MCSE of ``f^2``-based estimates."""
    import arviz as az

    from bayes_attn.inference import predictor_statistics

    pa, pb = predictor_statistics(ref), predictor_statistics(other)

    def se(dt, arr):
        da = dt["posterior"].ds["f"].copy(data=arr)
        return np.asarray(az.mcse(da, method="mean"))

    for key, fa in (("mean", lambda dt: dt["posterior"].ds["f"].values),):
        s = np.sqrt(se(ref, fa(ref)) ** 2 + se(other, fa(other)) ** 2)
        assert np.all(np.abs(pa[key] - pb[key]) < k * s + 1e-3)

    # second moment E[f^2 + f_var] (Rao-Blackwellised when present)
    def m2(dt):
        post = dt["posterior"].ds
        x = post["f"].values ** 2 + (post["f_var"].values if "f_var" in post else 0.0)
        return x

    s2 = np.sqrt(se(ref, m2(ref)) ** 2 + se(other, m2(other)) ** 2)
    assert np.all(np.abs(m2(ref).mean((0, 1)) - m2(other).mean((0, 1))) < k * s2 + 1e-3)
