"""The weighted, blocked PL and the coupling route against their definitions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_attn.potts import (
    FAConfig,
    FitSettings,
    InputError,
    blocked_pl,
    coupling_logits,
    coupling_matrix,
    fa_couplings,
    fa_init,
    fa_logits,
    fit_plmdca,
    fit_scan,
    pl_value,
    protein_settings,
    pseudo_nll,
    to_blocks,
    use_coupling_route,
)
from bayes_attn.potts._attention import _fa_objective, _fa_objective_couplings


def _data(M=40, L=6, C=4, seed=0):
    return np.random.default_rng(seed).integers(0, C, (M, L))


def test_coupling_route_equals_heads_route_value_and_gradient():
    s = _data()
    cfg = FAConfig(6, 4, heads=3, bias=True)
    p = fa_init(jax.random.PRNGKey(1), cfg)
    p = p._replace(b=0.3 * jax.random.normal(jax.random.PRNGKey(2), (6, 4)))
    w = np.random.default_rng(3).uniform(0.2, 1.0, 40)
    sb, wb = to_blocks(s, w, C=4)
    args = (sb, wb, 1e-3, 1e-4, 1e-2)
    v1, g1 = jax.value_and_grad(_fa_objective)(p, *args)
    v2, g2 = jax.value_and_grad(_fa_objective_couplings)(p, *args)
    np.testing.assert_allclose(v1, v2, rtol=1e-12)
    for k in p._fields:
        np.testing.assert_allclose(getattr(g1, k), getattr(g2, k), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        coupling_logits(coupling_matrix(fa_couplings(p)), jnp.asarray(s), p.b), fa_logits(p, s), rtol=1e-12
    )
    assert use_coupling_route(32, 21) and not use_coupling_route(1, 20)


def test_blocks_and_weights_match_the_definition():
    s = _data(M=37)
    w = np.random.default_rng(0).uniform(0.1, 2.0, 37)
    K = jax.random.normal(jax.random.PRNGKey(0), (6, 6, 4, 4))
    Km = coupling_matrix(K)
    f = lambda x: coupling_logits(Km, x)  # noqa: E731
    ref = pseudo_nll(f(jnp.asarray(s)), s, w)
    one = blocked_pl(f, *to_blocks(s, w, C=4))
    many = blocked_pl(f, *to_blocks(s, w, C=4, rows=8))  # 5 blocks, padding rows of weight 0
    direct = -sum(w[m] * jax.nn.log_softmax(f(jnp.asarray(s))[m], -1)[np.arange(6), s[m]].sum() for m in range(37)) / (
        6 * w.sum()
    )
    np.testing.assert_allclose([one, many, ref], direct, rtol=1e-12)
    g1 = jax.grad(lambda k: blocked_pl(lambda x: coupling_logits(coupling_matrix(k), x), *to_blocks(s, w, C=4)))(K)
    g2 = jax.grad(
        lambda k: blocked_pl(lambda x: coupling_logits(coupling_matrix(k), x), *to_blocks(s, w, C=4, rows=8))
    )(K)
    np.testing.assert_allclose(g1, g2, rtol=1e-10, atol=1e-13)


def test_integer_weights_equal_duplicated_rows():
    s = _data(M=30, L=5, C=3, seed=4)
    w = np.random.default_rng(5).integers(1, 4, 30)
    dup = np.repeat(s, w, axis=0)
    p1, _ = fit_plmdca(s, 3, 1e-2, weights=w.astype(float), tol=1e-9, max_iter=500)
    p2, _ = fit_plmdca(dup, 3, 1e-2, tol=1e-9, max_iter=500)
    np.testing.assert_allclose(p1.W, p2.W, atol=2e-5)
    assert pl_value(p1, s, w) == pytest.approx(pl_value(p2, dup), rel=1e-9)


def test_bad_weights_of_a_scan_and_a_pl_value_are_one_line_errors():
    """fit_scan and pl_value check their sequence weights at the boundary, before any fit: a wrong length, a NaN,
    a negative or an all-zero weight vector is one line naming the field (``val_weights`` for the validation
    set's), as the pseudo-posterior's are."""
    s = _data(M=12, L=4, C=3, seed=7)
    st = FitSettings("plmdca", lams=(1e-2,), fields=(True,), max_iter=1)
    key = jax.random.PRNGKey(0)
    bad = {
        "must have shape \\(8,\\)": np.ones(7),
        "contains NaN or inf": np.r_[np.ones(7), np.nan],
        "must be >= 0": np.r_[np.ones(7), -1.0],
        "are all zero": np.zeros(8),
    }
    for match, w in bad.items():
        with pytest.raises(InputError, match=f"^weights: {match}"):
            fit_scan(key, s[:8], s[8:], 3, st, weights=w)
        with pytest.raises(InputError, match="^val_weights: must have shape \\(4,\\)"):
            fit_scan(key, s[:8], s[8:], 3, st, val_weights=w)
    p = fit_scan(key, s[:8], s[8:], 3, st).params
    with pytest.raises(InputError, match="^weights: must be numbers"):
        pl_value(p, s, np.array(["a"] * 12))
    assert pl_value(p, s, np.ones(12)) == pl_value(p, s)


def test_float32_fit_and_scan_record():
    s = _data(M=60, L=6, C=4, seed=6)
    st = FitSettings("factored", heads=(2,), lams=(1e-3, 1e-4), fields=(True,), dtype="float32", max_iter=200)
    res = fit_scan(jax.random.PRNGKey(0), s[:50], s[50:], 4, st)
    assert res.params.V.dtype == jnp.float32 and len(res.entries) == 2 and res.config.heads == 2
    assert res.best["val_nll"] == min(e["val_nll"] for e in res.entries)
    pr = protein_settings("plmdca", 135, 1792.0)
    assert pr.lams[0] == pytest.approx(0.2 * 134 / (2 * 135 * 1792.0)) and pr.lam_fields == pytest.approx(
        1 / (135 * 1792)
    )
    with pytest.raises(InputError, match="heads: plmDCA has no heads"):
        FitSettings("plmdca", heads=(2,), fields=(True,))
    with pytest.raises(InputError, match="dtype"):
        FitSettings(dtype="float16")


def test_fa_from_couplings_is_exact_at_full_rank_and_best_below():
    from bayes_attn.potts import fa_from_couplings

    rng = np.random.default_rng(0)
    L, C, H = 5, 4, 3
    A = rng.standard_normal((H, L, L)) * (1 - np.eye(L))
    V = rng.standard_normal((H, C, C))
    K = np.einsum("hij,hab->ijab", A, V)
    p = fa_from_couplings(K, np.ones((L, C)), heads=H)
    np.testing.assert_allclose(np.asarray(fa_couplings(p)), K, atol=1e-10)  # a sum of 3 products: exact
    assert p.b.shape == (L, C)
    p2 = fa_from_couplings(K, heads=2)  # Eckart-Young: the best 2 terms
    sv = np.linalg.svd(K.reshape(L * L, C * C), compute_uv=False)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(fa_couplings(p2)) - K), sv[2], rtol=1e-9)
    with pytest.raises(InputError, match="heads"):
        fa_from_couplings(K, heads=C * C + 1)


def test_profile_fields_are_the_independent_site_optimum():
    from bayes_attn.potts import profile_fields

    s = _data(M=200, L=5, C=3, seed=7)
    w = np.random.default_rng(8).uniform(0.2, 1.0, 200)
    h = profile_fields(s, 3, w, pseudocount=0.0)
    f = np.array([[w[s[:, i] == a].sum() for a in range(3)] for i in range(5)]) / w.sum()
    np.testing.assert_allclose(np.exp(h) / np.exp(h).sum(1, keepdims=True), f, rtol=1e-12)
    np.testing.assert_allclose(h.sum(1), 0.0, atol=1e-12)
    g = jax.grad(lambda b: pseudo_nll(jnp.broadcast_to(b, (200, 5, 3)), s, w))(jnp.asarray(h))
    np.testing.assert_allclose(g, 0.0, atol=1e-12)  # the PL without couplings is stationary


def test_balanced_start_gives_both_factors_the_same_norm_and_is_what_the_fit_starts_from():
    from bayes_attn.potts import fa_balanced_start

    L, C, H = 60, 21, 64
    cfg = FAConfig(L, C, heads=H, bias=True)
    p = fa_balanced_start(jax.random.PRNGKey(3), cfg, norm=2.0)
    nA = np.sum(np.asarray(p.A) ** 2, axis=(1, 2)) / 4.0  # ||A^h||^2 / norm^2, mean 1
    nV = np.sum(np.asarray(p.V) ** 2, axis=(1, 2)) / 4.0
    # a sum of n squared N(0, 1/n) entries has variance 2/n: the mean over H heads within 5 s.e. of 1
    assert abs(nA.mean() - 1) < 5 * np.sqrt(2 / (L * L * H)) and abs(nV.mean() - 1) < 5 * np.sqrt(2 / (C * C * H))
    # the rescaling A -> cA, V -> V/c that minimises the factor penalty is c = 1 within sampling
    c2 = np.sqrt(nV / nA)
    assert abs(np.mean(c2) - 1) < 5 * np.std(c2) / np.sqrt(H) + 1e-12
    s = _data(M=30, L=L, C=C, seed=2)
    st = FitSettings("factored", heads=(H,), fields=(True,), max_iter=0, balanced_start=True)
    res = fit_scan(jax.random.PRNGKey(3), s, s[:0], C, st)
    np.testing.assert_array_equal(np.asarray(res.params.A), np.asarray(p.A) / 2.0)  # norm 1 by default
    assert (
        protein_settings("factored", L, 100.0).balanced_start
        and not protein_settings("plmdca", L, 100.0).balanced_start
    )
    with pytest.raises(InputError, match="balanced start"):
        fa_balanced_start(jax.random.PRNGKey(0), FAConfig(L, C, kind="softmax"))


def test_parameter_records_one_per_model_and_dicts_converted_at_the_boundary():
    """Every fit returns its model's record; a dict of arrays with one model's keys becomes that record, any other
    input is one line naming the field."""
    from bayes_attn.potts import FactoredParams, PlmParams, SoftmaxParams, as_params, couplings_and_fields

    s = _data(M=30, L=4, C=3)
    free = fa_init(jax.random.PRNGKey(0), FAConfig(4, 3, bias=True))
    soft = fa_init(jax.random.PRNGKey(0), FAConfig(4, 3, kind="softmax", d_pos=2, d_k=2))
    plm, _ = fit_plmdca(s, 3, max_iter=2)
    assert (type(free), type(soft), type(plm)) == (FactoredParams, SoftmaxParams, PlmParams) and soft.b is None
    as_dict = {"A": free.A, "V": free.V, "b": free.b}
    assert as_params(as_dict)._fields == free._fields and as_params(free) is free
    np.testing.assert_array_equal(couplings_and_fields(as_dict)[0], couplings_and_fields(free)[0])
    assert isinstance(as_params({"W": plm.W, "h": plm.h}), PlmParams)
    with pytest.raises(InputError, match=r"^params: keys \['A'\] are not"):
        as_params({"A": free.A})
    with pytest.raises(InputError, match="^init: must be"):
        fit_scan(jax.random.PRNGKey(0), s, s, 3, FitSettings(max_iter=1), init=[free.A, free.V])


def test_the_lambda_choice_of_every_model_is_the_librarys():
    """Without --lam, factored / softmax attention walk LAM_GRID down and stop once the validation PL rises;
    plmDCA fits PLM_LAM alone; given values are all fitted (docs/potts.md §4.1, §7.1)."""
    from bayes_attn.potts import LAM_FIELDS, LAM_GRID, PLM_LAM, data_settings, default_lams

    fa = data_settings("factored")
    assert fa.lams == LAM_GRID and fa.stop_when_worse and fa.lam_fields == LAM_FIELDS and fa.tol == 1e-6
    plm = data_settings("plmdca", fields=(True,))
    assert plm.lams == (PLM_LAM,) == default_lams("plmdca") and not plm.stop_when_worse and plm.lam_fields is None
    assert plm.tol == 1e-5
    given = data_settings("softmax", lams=[1e-2, 1e-3], heads=[2], lam_fields=0.0)
    assert given.lams == (1e-2, 1e-3) and not given.stop_when_worse and given.heads == (2,) and given.lam_fields == 0.0
    with pytest.raises(InputError, match="^model: "):
        data_settings("transformer")
