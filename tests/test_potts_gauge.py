"""Gauge invariances, gauge fixing and the coupling metrics (potts.md §5-6, §10.3)."""

import jax
import jax.numpy as jnp
import numpy as np

import bayes_attn  # noqa: F401
from bayes_attn.potts import (
    FAConfig,
    abs_corr,
    center,
    contact_precision,
    coupling_error,
    fa_couplings,
    fa_init,
    fa_logits,
    factor_recovery,
    generate_couplings,
    gauge_fix,
    kronecker_rank1,
    symmetrise,
    true_couplings,
    zero_sum,
)


def _params(kind="free", heads=2, seed=0):
    return fa_init(jax.random.PRNGKey(seed), FAConfig(6, 4, kind=kind, heads=heads, d_pos=3, d_k=3), scale=0.8)


def test_value_shift_leaves_conditionals_unchanged():
    """V -> V + 1 k^T shifts every logit of site i by sum_j A_ij k_{s_j}: softmax-invariant (§5)."""
    p = _params()
    s = np.random.default_rng(0).integers(0, 4, (8, 6))
    k = jnp.asarray(np.random.default_rng(1).normal(size=(2, 4)))
    q = p._replace(V=p.V + k[:, None, :])
    lp = jax.nn.log_softmax(fa_logits(p, s), -1)
    lq = jax.nn.log_softmax(fa_logits(q, s), -1)
    np.testing.assert_allclose(lp, lq, atol=1e-12)
    assert not np.allclose(fa_logits(p, s), fa_logits(q, s))


def test_scale_sign_gauge_leaves_couplings_unchanged():
    p = _params()
    for c in (3.0, -0.5):
        q = p._replace(A=c * p.A, V=p.V / c)
        np.testing.assert_allclose(fa_couplings(p), fa_couplings(q), atol=1e-12)
        assert np.isclose(abs_corr(p.A, J := q.A), 1.0)
        del J


def test_zero_sum_gauge_idempotent_and_removes_shifts():
    K = np.random.default_rng(2).normal(size=(5, 5, 3, 3))
    K0 = zero_sum(K)
    np.testing.assert_allclose(zero_sum(K0), K0, atol=1e-14)
    np.testing.assert_allclose(K0.sum(-1), 0, atol=1e-13)
    np.testing.assert_allclose(K0.sum(-2), 0, atol=1e-13)
    shift = K + np.random.default_rng(3).normal(size=(5, 5, 3, 1)) + np.random.default_rng(4).normal(size=(5, 5, 1, 3))
    np.testing.assert_allclose(zero_sum(shift), K0, atol=1e-12)
    S = symmetrise(K)
    np.testing.assert_allclose(S, S.transpose(1, 0, 3, 2))
    U = np.random.default_rng(5).normal(size=(4, 4))
    Pi = np.eye(4) - 1 / 4
    np.testing.assert_allclose(center(U), Pi @ U @ Pi, atol=1e-14)


def test_metrics_on_truth_and_kronecker_projection():
    J, U = generate_couplings("G1", 8, 5, seed=6)
    T = true_couplings(1.7, J, U)
    assert coupling_error(T, 1.7, J, U) < 1e-12
    assert np.isclose(coupling_error(np.zeros_like(T), 1.7, J, U), 1.0)
    # asymmetric gauge-equivalent version (fields via V_ab + g_a, shift of the other index) still exact
    assert coupling_error(T + np.random.default_rng(7).normal(size=(8, 8, 1, 5)), 1.7, J, U) < 1e-12
    Jh, Uh, frac = kronecker_rank1(-3.0 * T)
    assert np.isclose(frac, 1.0) and np.isclose(abs_corr(Jh[~np.eye(8, dtype=bool)], J[~np.eye(8, dtype=bool)]), 1.0)
    assert np.isclose(abs_corr(Uh, center(U)), 1.0)
    fr = factor_recovery(-2 * J, U / 5 + 1.0, J, U)
    assert np.isclose(fr["corr_A_J"], 1.0) and np.isclose(fr["corr_V_U"], 1.0)


def test_contact_precision_on_exact_sparse_couplings():
    J, U = generate_couplings("G3", 16, 4, seed=8, w=1.0)
    T = true_couplings(1.0, J, U)
    prec = contact_precision(T, J)
    n_true = int((np.triu(J) != 0).sum())
    assert all(prec[k] == 1.0 for k in prec if k <= n_true)
    assert gauge_fix(T).shape == T.shape


def test_gauge_fields_keep_the_conditionals():
    """Zero-sum couplings with gauge_fields give the same conditional logits up to a constant per
    (sequence, site), for an asymmetric K (the conditional form of plmDCA / FA)."""
    from bayes_attn.potts import gauge_fields

    rng = np.random.default_rng(9)
    L, C = 5, 4
    K = rng.normal(size=(L, L, C, C))
    K[np.arange(L), np.arange(L)] = 0
    b = rng.normal(size=(L, C))
    s = rng.integers(0, C, (7, L))

    def logits(K, b):
        return np.stack([[b[i] + sum(K[i, j][:, x[j]] for j in range(L) if j != i) for i in range(L)] for x in s])

    z1, z2 = logits(K, b), logits(zero_sum(K), gauge_fields(b, K))
    d = z1 - z2
    np.testing.assert_allclose(d - d.mean(-1, keepdims=True), 0, atol=1e-12)
    np.testing.assert_allclose(gauge_fields(b, K).sum(-1), 0, atol=1e-12)


def test_fa_metrics_exact_mapping_is_perfect():
    """The exact FA mapping (A = beta J, V = U, b = beta h) has corr 1 and zero error on couplings and
    fields, and zero test gap; plmDCA parameters holding the same couplings agree."""
    from bayes_attn.potts import Potts, fa_metrics, generate_fields

    J, U = generate_couplings("G1", 6, 4, seed=2)
    h, _ = generate_fields(6, 4, 2, field_sigma=0.5, consensus=1.0)
    m = Potts(J, U, 1.3, h)
    s = np.random.default_rng(3).integers(0, 4, (30, 6))
    fa = {"A": jnp.asarray(m.beta * J)[None], "V": jnp.asarray(U)[None], "b": jnp.asarray(m.beta * h)}
    plm = {"W": jnp.asarray(true_couplings(m.beta, J, U)), "h": jnp.asarray(m.beta * h)}
    for p in (fa, plm):
        r = fa_metrics(p, m, {"test": s, "val": s})
        assert abs(r["gap"]) < 1e-12 and r["eps_J"] < 1e-12 and r["eps_h"] < 1e-12
        assert np.isclose(r["corr_K"], 1.0) and np.isclose(r["corr_h"], 1.0)
    # a wrong field is seen by the field metrics only
    r = fa_metrics(dict(fa, b=fa["b"] + jnp.asarray(np.random.default_rng(4).normal(size=(6, 4)))), m, {"test": s})
    assert r["eps_J"] < 1e-12 and r["eps_h"] > 0.1
