"""Asymmetric plmDCA baseline (potts.md §7.1, §10.8)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayes_attn  # noqa: F401
from bayes_attn.potts import (
    PlmParams,
    coupling_logits,
    coupling_matrix,
    fit_plmdca,
    one_hot_rows,
    pl_value,
    plm_couplings,
    plm_logits,
    site_blocks,
    site_logits,
    to_blocks,
)
from bayes_attn.potts._plmdca import _objective, _site_objective


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


def _family(seed=1, M=300, L=9, C=4):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, C, (M, L))
    s[:, 1] = s[:, 0]
    s[: M // 3, 5] = (s[: M // 3, 3] + 1) % C
    return s, rng.uniform(0.3, 1.0, M), rng


def test_site_blocks_partition_the_sites_in_near_equal_blocks():
    for L in (1, 7, 9, 10, 158):
        for k in (1, 3, 4, 50, 200):
            b = site_blocks(L, k)
            assert b[0][0] == 0 and b[-1][1] == L and all(x[1] == y[0] for x, y in zip(b, b[1:]))
            sizes = [z - a for a, z in b]
            assert max(sizes) <= k and max(sizes) - min(sizes) <= 1 and len(b) == -(-L // min(k, L))


def test_block_objectives_sum_to_the_joint_objective_and_gradient():
    """(7.1c) is a sum over sites: the blocks' shares (rescaled back by |B| / L) add up to the joint value,
    and each block's gradient is the joint gradient's rows of that block."""
    s, w, rng = _family()
    L, C = s.shape[1], 4
    p = PlmParams(jnp.asarray(rng.normal(size=(L, L, C, C))), jnp.asarray(rng.normal(size=(L, C))))
    sb, wb = to_blocks(s, w, C=C)
    joint, g = jax.value_and_grad(_objective)(p, sb, wb, 1e-3, 2e-3)
    X = one_hot_rows(jnp.asarray(s), C, jnp.float64)
    total = 0.0
    for a, z in site_blocks(L, 4):
        sc = L / (z - a)
        pb = PlmParams(p.W[a:z], p.h[a:z])
        v, gb = jax.value_and_grad(_site_objective)(
            pb, X, jnp.asarray(s), jnp.asarray(w), jnp.arange(a, z), 1e-3 * sc, 2e-3 * sc
        )
        total += float(v) / sc
        np.testing.assert_allclose(np.asarray(gb.W) / sc, np.asarray(g.W[a:z]), rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(np.asarray(gb.h) / sc, np.asarray(g.h[a:z]), rtol=1e-10, atol=1e-14)
    assert abs(total - float(joint)) <= 1e-12 * abs(float(joint))


def test_fit_by_blocks_of_sites_equals_the_joint_fit():
    s, w, _ = _family()
    kw = dict(weights=w, tol=1e-9, rtol=0.0, max_iter=3000)
    pj, ij = fit_plmdca(s, 4, 1e-3, **kw)
    pb, ib = fit_plmdca(s, 4, 1e-3, site_block=4, **kw)
    assert ij.converged and ib.converged and ib.grad_norm <= 1e-9
    Wj = np.asarray(pj.W)
    assert np.abs(Wj - pb.W).max() <= 1e-4 * np.abs(Wj).max()
    np.testing.assert_allclose(pb.h, np.asarray(pj.h), atol=1e-4 * np.abs(np.asarray(pj.h)).max())
    assert ib.loss == pytest.approx(ij.loss, rel=1e-10)
    assert np.all(pb.W[np.arange(9), np.arange(9)] == 0)  # W_ii never moves
    # site_block >= L is the joint fit itself
    pf, _ = fit_plmdca(s, 4, 1e-3, site_block=9, **kw)
    np.testing.assert_array_equal(np.asarray(pf.W), Wj)


def test_an_unconverged_block_makes_the_fit_unconverged():
    s, w, _ = _family()
    _, info = fit_plmdca(s, 4, 1e-3, weights=w, tol=1e-12, rtol=0.0, max_iter=3, site_block=3)
    assert not info.converged and info.reason == "max_iter" and info.iterations == 3


def test_pl_value_by_blocks_of_sites_equals_the_whole_matrix(monkeypatch):
    import bayes_attn.potts._fit as fit_module

    s, w, rng = _family(M=120, L=12, C=5)
    p = PlmParams(rng.normal(size=(12, 12, 5, 5)), rng.normal(size=(12, 5)))
    whole = pl_value(p, s, w)
    monkeypatch.setattr(fit_module, "PL_SITES_ELEMENTS", 600)  # blocks of 4 sites
    assert pl_value(p, s, w) == pytest.approx(whole, rel=1e-12)


def test_site_logits_of_every_site_are_the_coupling_logits():
    rng = np.random.default_rng(3)
    L, C = 6, 4
    K = jnp.asarray(rng.normal(size=(L, L, C, C)))
    s = jnp.asarray(rng.integers(0, C, (7, L)))
    full = coupling_logits(coupling_matrix(K), s)
    part = site_logits(one_hot_rows(s, C, K.dtype), K[2:5], jnp.arange(2, 5))
    np.testing.assert_allclose(np.asarray(part), np.asarray(full[:, 2:5]), rtol=1e-12)


def test_site_block_is_a_plmdca_setting():
    from bayes_attn import InputError
    from bayes_attn.potts import FitSettings

    with pytest.raises(InputError, match="site-block"):
        FitSettings(model="factored", site_block=3)
    with pytest.raises(InputError, match="site-block"):
        FitSettings(model="plmdca", fields=(True,), site_block=-1)


def test_plm_couplings_hold_a_fit_once_and_mask_a_diagonal():
    s, w, rng = _family()
    p, _ = fit_plmdca(s, 4, 1e-3, weights=w, site_block=3, max_iter=20)
    assert plm_couplings(p) is np.asarray(p.W)  # a fit's W has zero diagonal blocks: no copy
    W = rng.normal(size=(5, 5, 3, 3)).astype(np.float32)
    K = plm_couplings({"W": W, "h": np.zeros((5, 3))})
    assert K is not W and K.dtype == np.float32 and not K[np.arange(5), np.arange(5)].any()
    np.testing.assert_array_equal(K[0, 1], W[0, 1])
