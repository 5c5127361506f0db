"""Kernels, predictor, GP baselines, head scores and silencing (docs/theory.md §4.1–§4.2, §4.6, §4.8, §6.13)."""

import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_task
from scipy.stats import norm

from bayes_attn.linalg import apply_kernel, kernel_diag
from bayes_attn.network import path_attention, path_inputs, path_kernel_matrix, path_kernels
from bayes_attn.theory import (
    gp_predict,
    head_scores,
    predict,
    predictor_metrics,
    silence,
    subset_paths,
)


def test_path_kernels_match_definition():
    task = random_task(P=5, Q=3, heads=(2, 3), seed=1)
    spec = task.spec(width=4, variances=(1.7, 1.0, 1.0, 1.0))
    C = path_kernel_matrix(task.phi("test", spec), task.phi("train", spec))
    xpi_te = np.asarray(path_inputs(jnp.asarray(task.x_test), path_attention(task.omegas("test"), "last")))
    xpi_tr = np.asarray(path_inputs(jnp.asarray(task.x_train), path_attention(task.omegas("train"), "last")))
    want = 1.7 / task.n0 * np.einsum("mip,niq->pqmn", xpi_te, xpi_tr)
    np.testing.assert_allclose(C, want, rtol=1e-12)
    # K_U = (1/n_pi) sum U C (§4.2), symmetric U
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 6))
    U = A + A.T
    pk = path_kernels(task.phi("train", spec), task.phi("test", spec))
    C_tr_te = path_kernel_matrix(task.phi("train", spec), task.phi("test", spec))
    np.testing.assert_allclose(
        apply_kernel(pk.cross, jnp.asarray(U)), np.einsum("pq,pqmn->mn", U, C_tr_te) / 6, rtol=1e-10, atol=1e-13
    )
    C_te = path_kernel_matrix(task.phi("test", spec), task.phi("test", spec))
    np.testing.assert_allclose(
        kernel_diag(pk.phi_test, jnp.asarray(U)), np.diagonal(np.einsum("pq,pqmn->mn", U, C_te)) / 6, rtol=1e-10
    )


def test_head_scores_identity_and_silencing():
    heads = (2, 3)
    scores = head_scores(2.5 * np.eye(6), heads, normalize=False)
    np.testing.assert_allclose(scores[0], 2.5 * 6 / 2)  # c n_pi / H_l (§4.8)
    np.testing.assert_allclose(scores[1], 2.5 * 6 / 3)
    # a hand-computed case: paths (h1,h2) flattened with h1 most significant
    U = np.zeros((6, 6))
    U[0, 4] = U[4, 0] = -1.0  # paths (0,0) and (1,1)
    s = head_scores(U, heads, normalize=False)
    np.testing.assert_allclose(s[0], [2.0, 2.0])
    np.testing.assert_allclose(s[1], [2.0, 2.0, 0.0])
    s2 = head_scores(U, heads, variant="scale_off_diagonals", normalize=False)
    np.testing.assert_allclose(s2[1], [0 + 2.0 / 6, 2.0 / 6, 0.0])
    assert max(float(x.max()) for x in head_scores(U, heads)) == pytest.approx(1.0)
    # silencing (§6.13)
    task = random_task(P=6, Q=4, heads=heads, seed=2)
    spec = task.spec(width=4, temperature=0.1)
    tr, te = task.phi("train", spec), task.phi("test", spec)
    rng = np.random.default_rng(3)
    B = rng.standard_normal((6, 6))
    U = jnp.asarray(B @ B.T / 6 + np.eye(6))
    m, v = predict(U, tr, te, task.y_train, 0.1)
    m0, v0 = predict(silence(U, heads, []), tr, te, task.y_train, 0.1)
    np.testing.assert_allclose(m0, m, rtol=1e-13)
    m_all, v_all = predict(silence(U, heads, [(1, 0), (1, 1), (1, 2)]), tr, te, task.y_train, 0.1)
    np.testing.assert_allclose(m_all, 0.0, atol=1e-14)
    np.testing.assert_allclose(v_all, 0.0, atol=1e-14)
    Us = np.asarray(silence(U, heads, [(0, 1)]))
    assert np.all(Us[3:] == 0) and np.all(Us[:, 3:] == 0) and np.all(Us[:3, :3] == np.asarray(U)[:3, :3])


def test_gp_subsets_and_metrics():
    assert list(subset_paths((2, 2), [[0], [0, 1]])) == [0, 1]
    assert list(subset_paths((2, 2), [[0, 1], [0]])) == [0, 2]
    task = random_task(P=6, Q=4, heads=(2, 2), seed=4)
    spec = task.spec(width=4, temperature=0.1, variances=(1.0, 2.0, 1.5, 0.5))
    tr, te = task.phi("train", spec), task.phi("test", spec)
    m, v = gp_predict(spec, tr, te, task.y_train)
    m_ref, v_ref = predict(1.5 * np.eye(4), tr, te, task.y_train, 0.1)  # sigma_a^2 prod sigma_l^2 = 1.5
    np.testing.assert_allclose(m, m_ref, rtol=1e-12)
    # a single-path subset: the GP of the one-path network, Phi rescaled by sqrt(n_pi)
    m1, _ = gp_predict(spec, tr, te, task.y_train, keep=[[1], [0]])
    m1_ref, _ = predict(1.5 * np.eye(1), tr[:, :, 2:3] * 2.0, te[:, :, 2:3] * 2.0, task.y_train, 0.1)
    np.testing.assert_allclose(m1, m1_ref, rtol=1e-12)
    out = predictor_metrics(np.array([0.5, -1.0]), np.array([0.25, 1.0]), np.array([1.0, 1.0]))
    assert out["accuracy"] == 0.5 and out["bias"] == pytest.approx((0.25 + 4.0) / 2)
    assert out["variance"] == pytest.approx(0.625) and out["gen_error"] == pytest.approx(2.75)
    assert out["prob_accuracy"] == pytest.approx((norm.cdf(1.0) + norm.cdf(-1.0)) / 2)
