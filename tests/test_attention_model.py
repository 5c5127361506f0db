"""Sampled attention (model kind "attention", docs/attention.md): the density against the fixed-attention model at
the same heads (an identity), the GP limit against two-dimensional quadrature (a closed form, with a planted
error that the test must reject), exact prior draws of the order parameters, resume, and bad input."""

import arviz as az
import numpy as np
import pytest
from conftest import random_task

from bayes_attn import InputError
from bayes_attn.inference import SamplerConfig, SamplingInterrupted, sample
from bayes_attn.inference.models import build_model, prior_positions
from bayes_attn.network import HeadLayer
from bayes_attn.tasks import Task


def _task_with_qk(task, Q, K):
    return Task(task.x_train, task.y_train, task.x_test, task.y_test, (HeadLayer.qk(Q, K),), name="qk")


def test_density_is_the_order_parameter_density_at_those_heads_plus_the_prior():
    """At any (Z, xi): ln p_attention(Z, xi, y) = ln p_order_parameters(xi, y | heads of Z) + ln N(Z; 0, I)."""
    task = random_task(P=9, Q=4, S=3, n0=4, heads=(2,), seed=3)
    spec = task.spec(width=7, temperature=0.2, variances=[1.0, 0.8, 1.3])
    rng = np.random.default_rng(0)
    B = rng.standard_normal((4, 3))
    model, args = build_model(task, spec, "attention", rank=2, basis=B, attention_scale=0.6)
    z = {k: rng.standard_normal(s) for k, s in model.site_shapes().items()}
    Q, K = 0.6 * z["z_Q1"] @ B.T, 0.6 * z["z_K1"] @ B.T  # (H, r, n0): the heads in token space
    op, op_args = build_model(_task_with_qk(task, Q, K), spec, "order_parameters")
    xi = {k: z[k] for k in op.site_shapes()}
    log_prior_z = sum(-0.5 * np.sum(z[k] ** 2) - 0.5 * z[k].size * np.log(2 * np.pi) for k in ("z_Q1", "z_K1"))
    lhs = float(model.log_density(z, args))
    rhs = float(op.log_density(xi, op_args)) + log_prior_z
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-9)
    # and the stored predictor is the fixed-attention model's at the same U
    d, d_op = model.derived(z, args), op.derived(xi, op_args)
    np.testing.assert_allclose(d["f"], d_op["f"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d["f_var"], d_op["f_var"], rtol=1e-10, atol=1e-12)


# ---- the GP limit against quadrature ------------------------------------------------------------------------
def _quadrature_mean(task, b, scale, variances, T, n=128):
    """E[f*] of the GP-limit posterior over (z_q, z_k) ~ N(0, 1)^2 by Gauss-Hermite quadrature, all in numpy:
    one head, rank 1, basis b: scores theta beta_s beta_t with theta = scale^2 z_q z_k, beta = x . b."""
    t, w = np.polynomial.hermite_e.hermegauss(n)  # weight exp(-t^2 / 2)
    w = w / w.sum()
    s0, s1, sa = variances
    g = sa * s1

    def phi(x, theta):
        beta = x @ b  # (P, S)
        scores = theta * beta[:, :, None] * beta[:, None, :]  # [p, key s, query t]
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        om = e / e.sum(axis=1, keepdims=True)
        xpi = np.einsum("psi,ps->pi", x, om[:, :, -1])  # readout "last": the last query
        return np.sqrt(s0) * xpi / np.sqrt(x.shape[-1])

    y = task.y_train
    logw, means = [], []
    for zq, wq in zip(t, w):
        for zk, wk in zip(t, w):
            theta = scale**2 * zq * zk
            ptr, pte = phi(task.x_train, theta), phi(task.x_test, theta)
            Kt = g * ptr @ ptr.T + T * np.eye(len(y))
            c = np.linalg.cholesky(Kt)
            a = np.linalg.solve(Kt, y)
            logw.append(np.log(wq * wk) - 0.5 * y @ a - np.sum(np.log(np.diag(c))))
            means.append(g * pte @ ptr.T @ a)
    logw = np.array(logw)
    p = np.exp(logw - logw.max())
    return (p[:, None] * np.array(means)).sum(0) / p.sum()


def _gp_problem():
    rng = np.random.default_rng(11)
    P, Q, S, n0 = 24, 4, 4, 3
    b = np.array([1.0, 0.5, -0.3])
    x_tr, x_te = rng.standard_normal((P, S, n0)), rng.standard_normal((Q, S, n0))
    # labels made by a sharply attending head (theta = 3), so the posterior of theta is far from its prior
    beta = x_tr @ b
    sc = 3.0 * beta[:, :, None] * beta[:, None, :]
    om = np.exp(sc - sc.max(1, keepdims=True))
    om /= om.sum(1, keepdims=True)
    y = np.sign(np.einsum("psi,ps->pi", x_tr, om[:, :, -1]) @ np.array([1.0, -1.0, 0.5]) + 1e-9)
    layer = HeadLayer.qk(rng.standard_normal((1, 1, n0)), rng.standard_normal((1, 1, n0)))
    task = Task(x_tr, y, x_te, np.ones(Q), (layer,), name="gp-quadrature")
    return task, b


@pytest.mark.slow
def test_gp_limit_matches_quadrature_and_rejects_a_planted_error():
    task, b = _gp_problem()
    variances, T, scale = (1.0, 1.0, 1.0), 0.05, 0.8
    spec = task.spec(width=10, temperature=T, variances=list(variances))
    cfg = SamplerConfig(
        model="attention",
        rank=1,
        limit="gp",
        attention_scale=scale,
        chains=4,
        warmup=500,
        draws=1500,
        seed=4,
        progress_bar=False,
    )
    dt = sample(task, spec, cfg, basis=b[:, None])
    f = dt["posterior"].ds["f"]
    ess = az.ess(f, method="bulk").values
    assert ess.min() >= 400 and float(az.rhat(f).max()) < 1.01
    mean, mcse = f.mean(("chain", "draw")).values, az.mcse(f, method="mean").values
    exact = _quadrature_mean(task, b, scale, variances, T)
    assert np.all(np.abs(mean - exact) < 5 * mcse), (mean, exact, mcse)
    # planted error: the quadrature of a prior 1.5 times wider is another posterior, and the test sees it
    wrong = _quadrature_mean(task, b, 1.5 * scale, variances, T)
    assert np.any(np.abs(mean - wrong) > 5 * mcse), (mean, wrong, mcse)


def test_quadrature_reference_is_converged():
    task, b = _gp_problem()
    """128 Gauss-Hermite nodes per axis against 96: agreement to 1e-5, far below any Monte Carlo error here."""
    a, c = (
        _quadrature_mean(task, b, 0.8, (1.0, 1.0, 1.0), 0.05, n=96),
        _quadrature_mean(task, b, 0.8, (1.0, 1.0, 1.0), 0.05),
    )
    np.testing.assert_allclose(a, c, rtol=0, atol=1e-5)


# ---- prior starts -------------------------------------------------------------------------------------------
def test_prior_draws_of_the_order_parameters_are_the_wishart_chain():
    """U_a = sigma_a^2 chi^2_Na / Na and E[U_1] = the GP point sigma_1^2 sigma_a^2 I (docs/theory.md §4.6)."""
    task = random_task(P=6, Q=3, S=3, n0=4, heads=(2,), seed=1)
    spec = task.spec(width=(6, 9), temperature=0.1, variances=[1.0, 0.7, 1.5])
    model, args = build_model(task, spec, "attention", rank=1)
    n = 1500
    pos = prior_positions(model, spec, n, seed=2)
    assert pos["z_Q1"].shape == (n, 2, 1, 4) and abs(float(np.std(pos["z_Q1"])) - 1) < 0.05
    import jax

    def unpack(xi):
        return model.layout.unpack(xi, args.hyper)[:2]

    U_a, Us = jax.vmap(unpack)({k: pos[k] for k in model.layout.site_names})
    U_a, U1 = np.asarray(U_a), np.asarray(Us[0])
    assert abs(U_a.mean() - 1.5) < 4 * 1.5 * np.sqrt(2 / 9 / n)  # E = sigma_a^2, sd = sigma_a^2 sqrt(2/Na)
    assert abs(U_a.var() / (2 * 1.5**2 / 9) - 1) < 4 * np.sqrt(2 / n) * 2  # Var = 2 sigma_a^4 / Na
    m = U1.mean(0)
    se = U1.std(0) / np.sqrt(n)
    assert np.all(np.abs(m - 0.7 * 1.5 * np.eye(2)) < 4 * se + 1e-12), (m, se)


# ---- resume, output, bad input ------------------------------------------------------------------------------
def test_resume_gives_the_same_draws_and_the_maps_are_stored_and_gated_by_invariants(tmp_path):
    task = random_task(P=8, Q=3, S=3, n0=4, heads=(2,), seed=5)
    spec = task.spec(width=5, temperature=0.3)
    cfg = SamplerConfig(
        model="attention", rank=2, chains=2, warmup=4, draws=6, checkpoint_every=2, seed=3, progress_bar=False
    )
    ref = sample(task, spec, cfg)
    ck = tmp_path / "a.ckpt.npz"
    with pytest.raises(SamplingInterrupted):
        sample(task, spec, cfg, checkpoint=ck, stop_after_chunks=3)
    out = sample(task, spec, cfg, checkpoint=ck, resume=True)
    for k, v in ref["posterior"].ds.items():
        np.testing.assert_array_equal(v.values, out["posterior"].ds[k].values, err_msg=k)
    post = out["posterior"].ds
    assert post["attention_1"].dims == ("chain", "draw", "map", "head_1", "key", "query")
    assert post["attention_1"].shape[2:] == (3, 2, 3, 3)
    np.testing.assert_allclose(post["attention_1"].sum("key"), 1.0, rtol=1e-12)  # softmax over keys
    assert list(post["U"].path.values) == ["1.1", "1.2"]
    assert out.attrs["init"] == "prior" and out.attrs["rank"] == 2 and out.attrs["attention_scale"] > 0
    # the chains start from distinct prior draws
    w0 = ref["warmup_sample_stats"].ds["lp"].values[:, 0]
    assert w0[0] != w0[1]
    # heads are exchangeable: U is gated through its eigenvalues, which a relabelling of the heads leaves alone
    from bayes_attn.diagnostics import invariant_draws, summarize

    ds = invariant_draws(out)
    assert set(ds.data_vars) == {"f", "U_eig", "U_a"}
    U = post["U"].values
    np.testing.assert_allclose(ds["U_eig"].values, np.linalg.eigvalsh(U[..., ::-1, ::-1]), rtol=1e-12)
    assert any(str(i).startswith("U_eig") for i in summarize(out).table.index)


BAD = [
    (dict(rank=0), "model.rank"),
    (dict(rank=5), "model.rank"),  # n0 = 4
    (dict(rank=1, attention_scale=-1.0), "model.attention_scale"),
    (dict(rank=1, limit="infinite"), "model.limit"),
    (dict(), "model.rank"),  # required
]


@pytest.mark.parametrize("kw,field", BAD, ids=[f for _, f in BAD])
def test_bad_options_name_their_field(kw, field):
    task = random_task(P=6, Q=3, S=3, n0=4, heads=(2,), seed=1)
    with pytest.raises(InputError, match=f"^{field}"):
        cfg = SamplerConfig(model="attention", **kw)
        build_model(
            task,
            task.spec(width=5, temperature=0.1),
            "attention",
            rank=cfg.rank,
            limit=cfg.limit,
            attention_scale=cfg.attention_scale,
        )


def test_bad_settings_elsewhere():
    task = random_task(P=6, Q=3, S=3, n0=4, heads=(2,), seed=1)
    spec = task.spec(width=5, temperature=0.1)
    with pytest.raises(InputError, match=r"^model.basis: must be a \(4, m\) matrix"):
        build_model(task, spec, "attention", rank=1, basis=np.ones((3, 2)))
    with pytest.raises(InputError, match=r"^model.rank: must be at most the attention's dimension 2"):
        build_model(task, spec, "attention", rank=3, basis=np.eye(4)[:, :2])
    with pytest.raises(InputError, match="^model.kind: the gibbs sampler cannot sample model 'attention'"):
        SamplerConfig(kind="gibbs", model="attention", rank=1)
    with pytest.raises(InputError, match="^model.rank: is an option of model kind"):
        SamplerConfig(model="collapsed", rank=2)
    with pytest.raises(InputError, match='^model.limit: kind = "attention_weights" samples a finite network'):
        build_model(task, spec, "attention_weights", rank=1, limit="gp")
    with pytest.raises(InputError, match='^model.limit: kind = "attention_weights" samples a finite network'):
        SamplerConfig(model="attention_weights", rank=1, limit="gp")  # refused when the config is read, too
    with pytest.raises(InputError, match="^sampler.init: 'prior' starts the attention model"):
        SamplerConfig(model="weights", init="prior")
    fixed = Task(
        task.x_train,
        task.y_train,
        task.x_test,
        task.y_test,
        (HeadLayer.fixed(train=np.full((6, 1, 3, 3), 1 / 3), test=np.full((3, 1, 3, 3), 1 / 3)),),
    )
    with pytest.raises(InputError, match="^data.attention_train_1: layer 1 has user-supplied attention arrays"):
        build_model(fixed, fixed.spec(width=5, temperature=0.1), "attention", rank=1)


#: (model kind, attention options) that the one check of these options refuses, whoever passes them
REFUSED = [
    ("attention_weights", dict(rank=1, limit="gp")),
    ("attention", dict(rank=1, limit="infinite")),
    ("attention", dict(rank=0)),
    ("attention", dict(rank=1, attention_scale=0.0)),
    ("attention", dict()),
    ("collapsed", dict(rank=2)),
    ("order_parameters", dict(limit="gp")),
    ("weights", dict(attention_scale=1.0)),
]


@pytest.mark.parametrize("kind,kw", REFUSED, ids=[f"{k}-{'-'.join(kw) or 'none'}" for k, kw in REFUSED])
def test_a_config_and_a_keyword_call_of_build_model_refuse_the_same_options_with_the_same_line(kind, kw):
    """config.check_attention_options is the one check of the attention options: the config (SamplerConfig, what a
    TOML [model] table becomes) and keyword callers of build_model get the same one line naming the field."""
    task = random_task(P=6, Q=3, S=3, n0=4, heads=(2,), seed=1)
    with pytest.raises(InputError, match=r"^model\.(rank|limit|attention_scale): ") as from_config:
        SamplerConfig(model=kind, **kw)
    with pytest.raises(InputError) as from_keywords:
        build_model(task, task.spec(width=5, temperature=0.1), kind, **kw)
    assert str(from_keywords.value) == str(from_config.value) and "\n" not in str(from_config.value)
    assert from_keywords.value.field == from_config.value.field


def test_gp_limit_gates_f_only():
    """In the GP limit U is a constant (R-hat undefined): the verdict is on f alone."""
    from bayes_attn.diagnostics import invariant_draws

    task = random_task(P=8, Q=3, S=3, n0=4, heads=(2,), seed=5)
    cfg = SamplerConfig(model="attention", rank=1, limit="gp", chains=2, warmup=5, draws=5, progress_bar=False)
    dt = sample(task, task.spec(width=5, temperature=0.3), cfg)
    assert np.all(dt["posterior"].ds["U"].values == dt["posterior"].ds["U"].values[0, 0])
    assert set(invariant_draws(dt).data_vars) == {"f"}


# ---- two routes to one posterior ------------------------------------------------------------------------------
def _routes_problem(seed=7, P=20, Q=4, S=3, n0=4):
    """Labels made by one sharply attending rank-one head, so that the attention posterior matters."""
    rng = np.random.default_rng(seed)
    x_tr, x_te = rng.standard_normal((P, S, n0)), rng.standard_normal((Q, S, n0))
    q, k = rng.standard_normal(n0), rng.standard_normal(n0)
    sc = 2.0 * np.einsum("psi,i->ps", x_tr, k)[:, :, None] * np.einsum("pti,i->pt", x_tr, q)[:, None, :]
    om = np.exp(sc - sc.max(1, keepdims=True))
    om /= om.sum(1, keepdims=True)
    y = np.sign(np.einsum("psi,ps->pi", x_tr, om[:, :, -1]) @ rng.standard_normal(n0))
    layer = HeadLayer.qk(rng.standard_normal((2, 1, n0)), rng.standard_normal((2, 1, n0)))
    return Task(x_tr, y, x_te, np.ones(Q), (layer,), name="routes")


@pytest.mark.slow(seconds=65)
def test_two_routes_agree_and_a_planted_prior_scale_is_rejected():
    """(Z, U) with the value weights integrated out == every weight sampled with Z (P = 20, N = 10, one layer of
    two heads, rank 1): posterior predictive means within 5 MCSE, ESS >= 400 in both; the weight route with a prior
    scale twice as wide is another posterior, and the same comparison rejects it."""
    task = _routes_problem()
    spec = task.spec(width=10, temperature=0.1)
    out = {}
    for name, model, scale in [
        ("collapsed", "attention", 0.5),
        ("weights", "attention_weights", 0.5),
        ("planted", "attention_weights", 1.0),
    ]:
        cfg = SamplerConfig(
            model=model, rank=1, attention_scale=scale, chains=4, warmup=500, draws=1500, seed=1, progress_bar=False
        )
        f = sample(task, spec, cfg)["posterior"].ds["f"]
        if name != "planted":
            assert az.ess(f, method="bulk").values.min() >= 400 and float(az.rhat(f).max()) < 1.01, name
        out[name] = f.mean(("chain", "draw")).values, az.mcse(f, method="mean").values
    (m1, e1), (m2, e2), (m3, e3) = out["collapsed"], out["weights"], out["planted"]
    assert np.all(np.abs(m1 - m2) < 5 * np.hypot(e1, e2)), (m1, m2, e1, e2)
    assert np.any(np.abs(m1 - m3) > 5 * np.hypot(e1, e3)), (m1, m3, e1, e3)


@pytest.mark.parametrize("kind, limit", [("attention", "finite"), ("attention", "gp"), ("order_parameters", "finite")])
def test_prior_and_likelihood_in_one_pass_are_the_densities_without_and_with_the_data(kind, limit):
    """Model.log_prior_and_likelihood (one pass, what tempering differentiates) against the two NumPyro densities:
    the prior is the density of the model without its data, and the likelihood the full density minus it."""
    import dataclasses

    task = random_task(P=9, Q=4, S=3, n0=4, heads=(2,), seed=5)
    spec = task.spec(width=7, temperature=0.2, variances=[1.0, 0.8, 1.3])
    rng = np.random.default_rng(1)
    opts = dict(rank=2, basis=rng.standard_normal((4, 3)), limit=limit) if kind == "attention" else {}
    model, args = build_model(task, spec, kind, **opts)
    for _ in range(3):
        z = {k: 0.7 * rng.standard_normal(s) for k, s in model.site_shapes().items()}
        prior, lik = model.log_prior_and_likelihood(z, args)
        want_prior = float(dataclasses.replace(model, data=False).log_density(z, args))
        want_lik = float(model.log_density(z, args)) - want_prior
        assert float(prior) == pytest.approx(want_prior, rel=1e-10, abs=1e-9)
        assert float(lik) == pytest.approx(want_lik, rel=1e-10, abs=1e-9)
        assert abs(float(lik)) > 1e-3  # the data term is there (a likelihood dropped by mistake would read 0)
        p0, l0 = dataclasses.replace(model, data=False).log_prior_and_likelihood(z, args)
        assert float(p0) == pytest.approx(want_prior, rel=1e-10, abs=1e-9) and float(l0) == 0.0
