"""Path expansion, order parameters and kernels against exact identities (theory.md §6)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_attn.network import (
    NetworkSpec,
    backward_readouts,
    effective_weights,
    forward,
    forward_paths,
    gram,
    order_parameters,
    path_attention,
    path_inputs,
    path_labels,
    phi,
)
from bayes_attn.linalg import kernel_matrix
from conftest import random_task


def _weights(rng, spec: NetworkSpec):
    N = spec.widths
    V0 = rng.standard_normal((N[0], spec.n0))
    values = [rng.standard_normal((H, N[l + 1], N[l])) for l, H in enumerate(spec.heads)]
    a = rng.standard_normal(N[-1])
    return V0, values, a


@pytest.mark.parametrize("L", [1, 2, 3])
@pytest.mark.parametrize("H", [1, 2, 3])
@pytest.mark.parametrize("readout", ["last", "first", "mean"])
def test_forward_equals_path_expansion(L, H, readout):
    heads = tuple([H] * L) if L < 3 else (H, max(1, H - 1), H)  # unequal heads for L=3
    task = random_task(P=5, S=4, n0=3, heads=heads, seed=L * 10 + H)
    widths = tuple(3 + i for i in range(L + 1))  # unequal widths
    spec = task.spec(width=widths, readout=readout)
    rng = np.random.default_rng(1)
    V0, values, a = _weights(rng, spec)
    x = jnp.asarray(task.x_train)
    om = task.omegas("train")
    f_layer = forward(x, om, readout, V0, values, a)
    xpi = path_inputs(x, path_attention(om, readout))
    f_path = forward_paths(xpi, V0, effective_weights(values, a))
    np.testing.assert_allclose(f_path, f_layer, rtol=1e-10, atol=1e-13)
    assert xpi.shape == (5, 3, spec.n_paths)


def test_attention_normalised_and_path_vectors_sum_to_one():
    task = random_task(P=4, S=5, n0=3, heads=(2, 3), seed=3)
    for om in task.omegas("test"):
        np.testing.assert_allclose(om.sum(axis=-2), 1.0, rtol=1e-12)
    for readout in ("last", "first", "mean"):
        v = path_attention(task.omegas("train"), readout)
        np.testing.assert_allclose(v.sum(axis=-1), 1.0, rtol=1e-12)


def test_path_order_h1_most_significant():
    task = random_task(heads=(2, 3), seed=4)
    assert path_labels([("a", "b"), ("x", "y", "z")]) == ["a,x", "a,y", "a,z", "b,x", "b,y", "b,z"]
    om = task.omegas("train")
    v = path_attention(om, "last")
    # path (h1=1, h2=2) is index 1*3+2 = 5: Omega^(1,1) @ omega^(2,2)
    want = jnp.einsum("bkq,bq->bk", om[0][:, 1], om[1][:, 2, :, -1])
    np.testing.assert_allclose(v[:, 5], want, rtol=1e-12)


def test_order_parameters_recursion_and_invariance():
    rng = np.random.default_rng(5)
    spec = NetworkSpec(heads=(2, 3), n0=4, width=(5, 6, 7))
    _, values, a = _weights(rng, spec)
    U_a, Us = order_parameters(values, a)
    w_eff = effective_weights(values, a)
    np.testing.assert_allclose(Us[0], w_eff @ w_eff.T / 5, rtol=1e-12)
    assert Us[0].shape == (6, 6) and Us[1].shape == (3, 3)
    np.testing.assert_allclose(U_a, a @ a / 7, rtol=1e-12)
    # orthogonal symmetry on every hidden representation leaves U invariant (theory.md §3)
    O1 = np.linalg.qr(rng.standard_normal((5, 5)))[0]
    O2 = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    Oa = np.linalg.qr(rng.standard_normal((7, 7)))[0]
    values_rot = [values[0] @ O1.T, values[1]]
    values_rot[0] = np.einsum("kj,hji->hki", O2, values_rot[0])  # V1 -> O2 V1 O1^T
    values_rot[1] = np.einsum("kj,hji->hki", Oa, values[1] @ O2.T)  # V2 -> Oa V2 O2^T
    U_a2, Us2 = order_parameters(values_rot, Oa @ a)
    np.testing.assert_allclose(U_a2, U_a, rtol=1e-10)
    for u, u2 in zip(Us, Us2):
        np.testing.assert_allclose(u2, u, rtol=1e-10, atol=1e-12)
    # backward readouts: w^(L) rows are V_h^T a / sqrt(N_a)
    ws = backward_readouts(values, a)
    np.testing.assert_allclose(ws[1][2], values[1][2].T @ a / np.sqrt(7), rtol=1e-12)


def test_kernel_identity_jacobian():
    """sigma_0^2 J J^T (J = df/dV0) == K_{U_1(W)} (theory.md §6 item 3)."""
    task = random_task(P=5, S=3, n0=4, heads=(2, 2), seed=7)
    spec = task.spec(width=3, variances=(1.7, 0.8, 1.3, 0.6))
    rng = np.random.default_rng(2)
    V0, values, a = _weights(rng, spec)
    xpi = task.path_inputs("train", spec.readout)
    w_eff = effective_weights(values, a)
    J = jax.jacobian(lambda V: forward_paths(xpi, V, w_eff))(jnp.asarray(V0)).reshape(5, -1)
    K_jac = spec.sigma2_input * J @ J.T
    K_phi = kernel_matrix(phi(xpi, spec.sigma2_input), phi(xpi, spec.sigma2_input), gram(w_eff))
    np.testing.assert_allclose(K_phi, K_jac, rtol=1e-10)


def test_path_inputs_sum_over_tokens():
    task = random_task(P=3, S=4, n0=2, heads=(2,), seed=9)
    v = path_attention(task.omegas("train"), "mean")
    xpi = path_inputs(jnp.asarray(task.x_train), v)
    for b, p in itertools.product(range(3), range(2)):
        np.testing.assert_allclose(xpi[b, :, p], task.x_train[b].T @ v[b, p], rtol=1e-12)


@pytest.mark.parametrize("G", [2, 5], ids=["projected", "bilinear"])  # 2G < N0 and 2G >= N0 (N0 = 5)
def test_qk_scores_are_the_definition_and_pooled_attention_reads_one_query(G):
    from bayes_attn.network import pool, pooled_qk_attention, propagate_paths, qk_scores, softmax_keys

    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 6, 5))
    Q, K = rng.standard_normal((2, 2, G, 5))
    # A[b,h,s,t] = (K_h x_s) . (Q_h x_t) / sqrt(G), written out term by term
    ref = np.zeros((3, 2, 6, 6))
    for b, h, s, t in itertools.product(range(3), range(2), range(6), range(6)):
        ref[b, h, s, t] = (K[h] @ x[b, s]) @ (Q[h] @ x[b, t]) / np.sqrt(G)
    np.testing.assert_allclose(qk_scores(x, Q, K), ref, rtol=1e-12, atol=1e-12)
    om = softmax_keys(jnp.asarray(ref))
    lower = softmax_keys(jnp.asarray(rng.standard_normal((3, 3, 6, 6))))
    for readout in ("last", "first", "mean"):
        top = pooled_qk_attention(x, Q, K, readout)
        np.testing.assert_allclose(top, pool(om, readout), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(
            propagate_paths(top, [lower]), path_attention([lower, om], readout), rtol=1e-12, atol=1e-14
        )
