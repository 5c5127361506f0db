"""NumPyro models: the collapsed likelihood is the full one integrated over V^(0) (theory.md §5.1),
and NUTS recovers closed-form Gaussian posteriors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer.util import log_likelihood

from bayes_attn.inference import SamplerConfig, build_model, predictor_statistics, sample
from bayes_attn.linalg import kernel_matrix
from bayes_attn.network import effective_weights, forward_paths, gram
from conftest import random_task


def _draw(rng, shapes):
    return {k: rng.standard_normal(s) for k, s in shapes.items()}


def test_collapsed_likelihood_is_full_likelihood_integrated_over_V0():
    task = random_task(P=5, S=3, n0=3, heads=(2, 2), seed=11)
    spec = task.spec(width=3, temperature=0.3, variances=(1.5, 0.7, 1.2, 0.9))
    (full, fargs), (coll, cargs) = build_model(task, spec, "weights"), build_model(task, spec, "collapsed")
    rng = np.random.default_rng(0)
    z = _draw(rng, coll.site_shapes())
    # closed form: y | W ~ N(0, sigma0^2 J J^T + T I), J = df/dV0 (f linear in V0)
    s = np.sqrt(spec.variances)
    values = [s[l + 1] * z[f"z_V{l + 1}"] for l in range(2)]
    w_eff = effective_weights(values, s[-1] * z["z_a"])
    J = jax.jacobian(lambda V: forward_paths(fargs.xpi_train, V, w_eff))(jnp.zeros((3, 3))).reshape(5, -1)
    cov = spec.sigma2_input * J @ J.T + spec.temperature * np.eye(5)
    y = task.y_train
    want = -0.5 * (y @ np.linalg.solve(cov, y) + np.linalg.slogdet(cov)[1] + 5 * np.log(2 * np.pi))
    # the collapsed model's factor, read off its trace
    from numpyro import handlers

    tr = handlers.trace(handlers.substitute(coll.numpyro_model, data=z)).get_trace(cargs)
    np.testing.assert_allclose(float(tr["y"]["fn"].log_factor), want, rtol=1e-10)
    # and a Monte-Carlo check of the integral itself: E_V0 N(y; f(V0), T)
    V0 = rng.standard_normal((200000, 3, 3)) * s[0]
    f = jax.vmap(lambda V: forward_paths(fargs.xpi_train, V, w_eff))(V0)
    loglik = -0.5 * (((f - y) ** 2).sum(-1) / spec.temperature + 5 * np.log(2 * np.pi * spec.temperature))
    mc = jax.scipy.special.logsumexp(loglik) - np.log(len(V0))
    assert float(mc) == pytest.approx(want, abs=0.05)
    # the full model's likelihood is the Gaussian one
    zf = {**z, "z_V0": V0[0] / s[0]}
    ll = log_likelihood(full.numpyro_model, {k: v[None] for k, v in zf.items()}, fargs)["y"][0]
    np.testing.assert_allclose(float(ll.sum()), float(loglik[0]), rtol=1e-10)
    # its kernel is K_{U_1(W)} (derived U is the same in both models)
    np.testing.assert_allclose(coll.derived(z, cargs)["U"], gram(w_eff), rtol=1e-12)
    K = kernel_matrix(cargs.kernels.train.phi_a, cargs.kernels.train.phi_a, gram(w_eff))
    np.testing.assert_allclose(K, spec.sigma2_input * J @ J.T, rtol=1e-10)


def _dt(task, spec, cfg, fixed=None):
    dt = sample(task, spec, cfg, fixed=fixed)
    return dt, {k: dt["sample_stats"].ds[k].values for k in dt["sample_stats"].ds.data_vars}


def test_nuts_recovers_bayesian_linear_regression_posterior():
    """Only the readout free: f = X a, Gaussian prior and likelihood -> closed-form posterior of f(x*)."""
    task = random_task(P=8, Q=5, S=3, n0=3, heads=(2,), seed=12)
    spec = task.spec(width=4, temperature=0.2, variances=(1.0, 1.3, 0.8))
    rng = np.random.default_rng(1)
    model, args = build_model(task, spec, "weights")
    fixed = {k: rng.standard_normal(v) for k, v in model.site_shapes().items() if k != "z_a"}
    cfg = SamplerConfig(chains=2, warmup=300, draws=1500, seed=3, progress_bar=False)
    dt, stats = _dt(task, spec, cfg, fixed)

    # closed form: f(x) = X(x) z_a with X the Jacobian in z_a (exactly linear)
    def f_of(za, split):
        xpi = args.xpi_train if split == "train" else args.xpi_test
        z = {**fixed, "z_a": za}
        s = np.sqrt(spec.variances)
        values = [s[1] * z["z_V1"]]
        return forward_paths(xpi, s[0] * z["z_V0"], effective_weights(values, s[-1] * za))

    X = jax.jacobian(lambda za: f_of(za, "train"))(jnp.zeros(4))
    Xs = jax.jacobian(lambda za: f_of(za, "test"))(jnp.zeros(4))
    prec = np.eye(4) + X.T @ X / spec.temperature
    cov = np.linalg.inv(prec)
    mean_z = cov @ X.T @ task.y_train / spec.temperature
    f_mean, f_var = Xs @ mean_z, np.einsum("qi,ij,qj->q", Xs, cov, Xs)
    st = predictor_statistics(dt)
    import arviz as az

    mcse = az.mcse(dt["posterior"].ds["f"]).values
    assert np.all(np.abs(st["mean"] - f_mean) < 4 * mcse + 1e-9)
    # variance: relative error of a sample variance with ESS ~ >= 500 is ~ sqrt(2/500) ~ 6%
    np.testing.assert_allclose(st["var"], f_var, rtol=0.25)
    assert int(stats["diverging"].sum()) == 0


def test_fixed_sites_are_validated():
    task = random_task()
    spec = task.spec(width=3)
    from bayes_attn import InputError

    with pytest.raises(InputError, match="fixed.z_V9"):
        build_model(task, spec, "weights", fixed={"z_V9": np.zeros(3)})


@pytest.mark.slow
def test_full_and_collapsed_agree_on_predictive_means():
    task = random_task(P=8, Q=6, S=3, n0=3, heads=(2,), seed=13)
    spec = task.spec(width=3, temperature=0.3)
    cfg = SamplerConfig(chains=2, warmup=500, draws=2000, seed=5, progress_bar=False)
    import arviz as az

    out = {}
    for collapsed in (False, True):
        model = "collapsed" if collapsed else "weights"
        dt, _ = _dt(task, spec, SamplerConfig(**{**vars(cfg), "collapsed": collapsed, "model": model}))
        out[collapsed] = (predictor_statistics(dt)["mean"], az.mcse(dt["posterior"].ds["f"]).values)
    (m0, e0), (m1, e1) = out[False], out[True]
    assert np.all(np.abs(m0 - m1) < 4 * np.sqrt(e0**2 + e1**2))
