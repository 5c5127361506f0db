"""Action of the theory (docs/theory.md §4.4–§4.6, sanity identities §6.5–§6.7)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_task

from bayes_attn.linalg import apply_kernel, kernel_data
from bayes_attn.network import NetworkSpec
from bayes_attn.theory import (
    action,
    energy,
    entropy,
    gp_order_parameters,
    partial_trace,
    reduced_action,
    u_a_closed_form,
)


def _spd(rng, p, scale=1.0):
    A = rng.standard_normal((p, p))
    return scale * (A @ A.T / p + 0.5 * np.eye(p))


def _sym(rng, p):
    A = rng.standard_normal((p, p))
    return (A + A.T) / 2


SPECS = [
    NetworkSpec(heads=(2, 3), n0=4, width=(7, 11, 5), variances=(1.3, 0.7, 1.6, 0.9), temperature=0.2),
    NetworkSpec(heads=(3,), n0=4, width=(9, 4), variances=(1.0, 1.4, 0.6), temperature=0.1),
    NetworkSpec(heads=(2, 1, 2), n0=4, width=(6, 8, 10, 12), variances=(1.0, 0.8, 1.2, 1.1, 0.7), temperature=0.3),
]


def test_partial_trace_matches_definition():
    rng = np.random.default_rng(0)
    H, D = 3, 2
    U = rng.standard_normal((H * D, H * D))
    want = sum(U[h * D : (h + 1) * D, h * D : (h + 1) * D] for h in range(H))
    np.testing.assert_allclose(partial_trace(jnp.asarray(U), H), want, rtol=1e-14)


@pytest.mark.parametrize("spec", SPECS)
def test_entropy_matches_kronecker_form_and_no_data_point(spec):
    rng = np.random.default_rng(1)
    U_a = 0.8
    Us = [jnp.asarray(_spd(rng, spec.p(l))) for l in range(1, spec.n_layers + 1)]
    # reference with explicit I_H (x) U_{l+1} inverse
    nxt = np.array([[U_a]])
    ref = spec.widths[-1] * (U_a / spec.sigma2_readout - np.log(U_a))
    for l in range(spec.n_layers, 0, -1):
        U = np.asarray(Us[l - 1])
        H, N, s2 = spec.heads[l - 1], spec.widths[l - 1], spec.sigma2_layers[l - 1]
        big = np.kron(np.eye(H), nxt)
        ref += N * (np.trace(np.linalg.solve(big, U)) / s2 - np.linalg.slogdet(U)[1] + H * np.linalg.slogdet(nxt)[1])
        nxt = U
    assert float(entropy(U_a, Us, spec)) == pytest.approx(ref, rel=1e-12)
    # no data: the GP point is stationary for every U (theory.md §4.6, §6.7)
    U_a0, Us0 = gp_order_parameters(spec)
    g_a, g_U = jax.grad(entropy, argnums=(0, 1))(U_a0, Us0, spec)
    assert abs(float(g_a)) < 1e-9
    for g in g_U:
        assert float(jnp.max(jnp.abs(g))) < 1e-9
    assert float(u_a_closed_form(Us0[-1], spec)) == pytest.approx(spec.sigma2_readout, rel=1e-13)


@pytest.mark.parametrize("spec", SPECS)
def test_u_a_closed_form_is_stationary(spec):
    rng = np.random.default_rng(2)
    Us = [jnp.asarray(_spd(rng, spec.p(l))) for l in range(1, spec.n_layers + 1)]
    U_a = u_a_closed_form(Us[-1], spec)
    assert float(U_a) > 0
    g = jax.grad(entropy)(U_a, Us, spec)
    assert abs(float(g)) < 1e-12 * spec.widths[-1] / float(U_a) * 10


def test_energy_equals_dense_formula_and_inf_when_not_pd():
    task = random_task(P=6, heads=(2, 2), seed=3)
    spec = task.spec(width=5, temperature=0.1)
    phi = task.phi("train", spec)
    kern = kernel_data(phi)
    rng = np.random.default_rng(3)
    U = jnp.asarray(_spd(rng, 4))
    K = np.asarray(apply_kernel(kern, U)) + 0.1 * np.eye(6)
    y = task.y_train
    ref = np.linalg.slogdet(K)[1] + y @ np.linalg.solve(K, y)
    assert float(energy(U, kern, y, 0.1)) == pytest.approx(ref, rel=1e-12)
    assert float(energy(-10.0 * U, kern, y, 0.1)) == np.inf


@pytest.mark.parametrize("spec", SPECS[:2])
def test_gradients_finite_differences(spec):
    """autodiff == central finite differences along random symmetric directions (§6.5)."""
    task = random_task(P=7, heads=spec.heads, seed=4)
    phi = task.phi("train", spec)
    kern = kernel_data(phi)
    y = jnp.asarray(task.y_train)
    rng = np.random.default_rng(5)
    Us = [jnp.asarray(_spd(rng, spec.p(l))) for l in range(1, spec.n_layers + 1)]
    U_a = 0.9
    grads = jax.grad(action, argnums=(0, 1))(U_a, Us, spec, kern, y)
    eps = 1e-5
    for l in range(spec.n_layers):
        D = jnp.asarray(_sym(rng, spec.p(l + 1)))
        plus = [U + eps * D if i == l else U for i, U in enumerate(Us)]
        minus = [U - eps * D if i == l else U for i, U in enumerate(Us)]
        fd = (action(U_a, plus, spec, kern, y) - action(U_a, minus, spec, kern, y)) / (2 * eps)
        ad = jnp.sum(grads[1][l] * D)
        assert float(ad) == pytest.approx(float(fd), rel=1e-6)
    fd_a = (action(U_a + eps, Us, spec, kern, y) - action(U_a - eps, Us, spec, kern, y)) / (2 * eps)
    assert float(grads[0]) == pytest.approx(float(fd_a), rel=1e-6)
    # reduced action: envelope theorem (gradient ignores dU_a/dU_L)
    g_red = jax.grad(reduced_action)(Us, spec, kern, y)
    U_a_star = u_a_closed_form(Us[-1], spec)
    g_part = jax.grad(action, argnums=1)(U_a_star, Us, spec, kern, y)
    for a, b in zip(g_red, g_part):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * float(jnp.max(jnp.abs(b))))


@pytest.mark.parametrize("spec", SPECS, ids=["L2", "L1", "L3"])
def test_entropy_gradient_is_the_autodiff_gradient_at_fixed_and_closed_form_u_a(spec):
    """entropy_gradient (eqs. (4.5c), (4.5d)) against JAX's gradient of entropy: at any fixed U_a, and at the
    closed-form U_a, where it is also the gradient of the reduced entropy (envelope theorem)."""
    from bayes_attn.theory._action import entropy_gradient

    rng = np.random.default_rng(7)
    Us = [jnp.asarray(_spd(rng, spec.p(l))) for l in range(1, spec.n_layers + 1)]
    U_a = 0.83
    auto = jax.grad(entropy, argnums=1)(U_a, Us, spec)
    for g, a in zip(entropy_gradient(Us, U_a, spec), auto):
        np.testing.assert_allclose(g, a, rtol=1e-11, atol=1e-12)
    reduced = jax.grad(lambda Us: entropy(u_a_closed_form(Us[-1], spec), Us, spec))(Us)
    for g, a in zip(entropy_gradient(Us, u_a_closed_form(Us[-1], spec), spec), reduced):
        np.testing.assert_allclose(g, a, rtol=1e-10, atol=1e-11)


@pytest.mark.parametrize("spec", SPECS, ids=["L2", "L1", "L3"])
def test_reduced_entropy_hessian_is_the_autodiff_hessian_in_packed_coordinates(spec):
    """reduced_entropy_hessian (vec coordinates, U_a eliminated by its Schur complement) mapped to the packed
    upper triangles equals JAX's Hessian of the reduced entropy there."""
    from scipy.linalg import block_diag

    from bayes_attn.linalg import pack_symmetric, symmetric_to_packed_matrix, unpack_symmetric
    from bayes_attn.theory._action import reduced_entropy_hessian

    rng = np.random.default_rng(11)
    sizes = [spec.p(l) for l in range(1, spec.n_layers + 1)]
    Us = [jnp.asarray(_spd(rng, p)) for p in sizes]

    def reduced(u):
        V = unpack_symmetric(u, sizes)
        return entropy(u_a_closed_form(V[-1], spec), V, spec)

    auto = jax.jit(jax.hessian(reduced))(pack_symmetric(Us))  # compiled: op by op, ~240 small programs per case
    D = block_diag(*(symmetric_to_packed_matrix(p) for p in sizes))  # vec U_l = D_l u_l, layer by layer
    np.testing.assert_allclose(D.T @ reduced_entropy_hessian(Us, spec) @ D, auto, rtol=1e-10, atol=1e-10)
