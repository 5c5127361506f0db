"""Training factored attention by PL / MLM (potts.md §4, §10.7): consistency on exact samples."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayes_attn  # noqa: F401
from bayes_attn import InputError
from bayes_attn.potts import (
    FAConfig,
    Potts,
    coupling_error,
    exact_distribution,
    fa_couplings,
    fit_adam_mlm,
    fit_lbfgs,
    generate_couplings,
    nll_star,
    pl_loss,
)


@pytest.fixture(scope="module")
def exact_data():
    J, U = generate_couplings("G1", 4, 3, seed=3)
    m = Potts(2.0 * J, U, 1.0)
    states, p = exact_distribution(m)
    rng = np.random.default_rng(0)
    return m, states[rng.choice(len(p), 8000, p=p)], states[rng.choice(len(p), 20000, p=p)]


def test_fa_free_recovers_couplings_from_exact_samples(exact_data):
    """PL is consistent: with M = 8000 exact samples, eps_J is small and the test gap ~ 0."""
    m, tr, te = exact_data
    p, info = fit_lbfgs(jax.random.PRNGKey(0), tr, FAConfig(4, 3), lam=0.0, tol=1e-7)
    assert info.converged, info
    K = np.asarray(fa_couplings(p))
    assert coupling_error(K, m.beta, m.J, m.U) < 0.15
    assert abs(float(pl_loss(p, te)) - nll_star(m, te)) < 5e-3
    # the training loss cannot beat the truth by more than the finite-sample optimism
    assert float(pl_loss(p, tr)) <= nll_star(m, tr) + 1e-9


@pytest.mark.slow
def test_adam_mlm_reaches_lbfgs_loss(exact_data):
    """One-mask MLM with Adam (unbiased SGD on l_PL) reaches the L-BFGS PL loss (§4.1)."""
    m, tr, _ = exact_data
    cfg = FAConfig(4, 3)
    p1, _ = fit_lbfgs(jax.random.PRNGKey(0), tr, cfg, lam=1e-4)
    p2, losses = fit_adam_mlm(jax.random.PRNGKey(1), tr, cfg, lam=1e-4, steps=1500, batch=1024, lr=3e-2)
    assert abs(float(pl_loss(p2, tr)) - float(pl_loss(p1, tr))) < 5e-3
    assert losses[-200:].mean() < losses[:50].mean()


def test_fit_rejects_wrong_shape():
    with pytest.raises(InputError, match="^sequences:"):
        fit_lbfgs(jax.random.PRNGKey(0), np.zeros((5, 3), int), FAConfig(4, 3))


def test_stopping_rule_reports_its_reason():
    """L-BFGS says why it stopped: the gradient tolerance, the relative decrease of the objective
    (both convergence, with the final gradient norm), or max_iter (not convergence)."""
    from bayes_attn.potts import lbfgs

    target = np.linspace(-1, 1, 7)

    def f(p, t):
        return 1.0 + jnp.sum((p["x"] - t) ** 2) + 0.1 * jnp.sum((p["x"] - t) ** 4)

    p0 = {"x": jnp.zeros(7)}
    _, info = lbfgs(f, p0, jnp.asarray(target), tol=1e-8, rtol=0.0)
    assert info.reason == "gradient" and info.converged and info.grad_norm <= 1e-8
    # an infimum that is not attained (logistic loss on separable data): the gradient never reaches a
    # tiny tolerance, the relative decrease does -> "objective", converged, gradient norm reported
    g = lambda p, t: 1.0 + jnp.sum(jax.nn.softplus(-p["x"] * t))  # noqa: E731
    _, info = lbfgs(g, {"x": jnp.zeros(7)}, jnp.asarray(target + 2.0), tol=1e-14, rtol=1e-6)
    assert info.reason == "objective" and info.converged and 0 <= info.rel_decrease <= 1e-6
    assert info.grad_norm > 1e-14
    _, info = lbfgs(f, p0, jnp.asarray(target), max_iter=2, tol=0.0, rtol=0.0)
    assert info.reason == "max_iter" and not info.converged and info.iterations == 2


def test_the_stop_reasons_are_the_reasons_lbfgs_records():
    """STOP_REASONS names every reason lbfgs can record in FitInfo.reason, and no other (a listed reason nothing
    produces would be a state a reader waits for in vain)."""
    import inspect
    import re

    from bayes_attn.potts import STOP_REASONS, lbfgs

    recorded = re.findall(r'reason = "(\w+)"', inspect.getsource(lbfgs))
    assert sorted(recorded) == sorted(STOP_REASONS) and len(set(recorded)) == len(recorded), recorded


def test_warm_start_adds_missing_bias():
    cfg = FAConfig(4, 3, bias=True)
    s = np.random.default_rng(0).integers(0, 3, (50, 4))
    p0, _ = fit_lbfgs(jax.random.PRNGKey(0), s, FAConfig(4, 3), lam=1e-3, max_iter=20)
    p1, _ = fit_lbfgs(jax.random.PRNGKey(0), s, cfg, lam=1e-3, max_iter=0, params=p0)
    np.testing.assert_array_equal(p1.A, p0.A)
    np.testing.assert_array_equal(p1.b, 0)


def test_field_penalty_keeps_an_unseen_colours_field_at_its_stationary_point():
    """A colour that never occurs at a site: the penalised PL has a finite optimum where, in closed form,
    d/db_i(a) [mean PL] = (1/(M L)) sum_m p_m,i(a) balances 2 lam_fields b_i(a), i.e.
    b_i(a) = -sum_m p_m,i(a) / (2 lam_fields M L); unpenalised, the same field runs far below it."""
    from bayes_attn.potts import LAM_FIELDS, fa_logits, fa_penalty, field_penalty, pl_loss

    rng = np.random.default_rng(3)
    M, L, C = 200, 4, 3
    s = rng.integers(0, C, (M, L))
    s[:, 0] = rng.integers(0, C - 1, M)  # colour C-1 never occurs at site 0
    cfg = FAConfig(L, C, bias=True)
    lam, lam_b = 1e-3, 1e-3
    p, info = fit_lbfgs(jax.random.PRNGKey(0), s, cfg, lam=lam, lam_fields=lam_b, tol=1e-10, rtol=0.0)
    assert info.converged
    probs = jax.nn.softmax(fa_logits(p, jnp.asarray(s)), -1)
    expected = -float(probs[:, 0, C - 1].sum()) / (2 * lam_b * M * L)
    assert float(p.b[0, C - 1]) == pytest.approx(expected, rel=1e-6)
    # the reported objective is PL + lam |A, V|^2 + lam_fields |b|^2
    assert info.loss == pytest.approx(float(pl_loss(p, s) + lam * fa_penalty(p) + lam_b * field_penalty(p)), rel=1e-12)
    p0, _ = fit_lbfgs(jax.random.PRNGKey(0), s, cfg, lam=lam, lam_fields=0.0, max_iter=400)
    assert float(p0.b[0, C - 1]) < float(p.b[0, C - 1]) - 2.0
    assert LAM_FIELDS > 0 and float(field_penalty({"A": jnp.ones((1, L, L)), "V": jnp.ones((1, C, C))})) == 0.0
    with pytest.raises(InputError, match="lam_fields: must be >= 0"):
        fit_lbfgs(jax.random.PRNGKey(0), s, cfg, lam_fields=-1.0)
