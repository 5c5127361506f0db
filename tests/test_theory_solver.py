"""Saddle-point equations, solver and reference (docs/theory.md §4.5–§4.7, §6.5–§6.10)."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_task
from scipy.optimize import brentq

from bayes_attn.linalg import energy_derivatives, energy_gradient, kernel_data, pack_cholesky
from bayes_attn.network import Hyper, NetworkSpec
from bayes_attn.theory import (
    TheoryWarning,
    energy,
    entropy,
    reference_solve,
    solve,
    u_l_root,
)
from bayes_attn.theory._solver import _newton_data, _value


def _spd(rng, p):
    A = rng.standard_normal((p, p))
    return jnp.asarray(A @ A.T / p + 0.5 * np.eye(p))


@pytest.mark.parametrize("P,n0", [(6, 8), (9, 3)])  # both contractions: path blocks and features
def test_energy_derivatives_match_autodiff(P, n0):
    task = random_task(P=P, n0=n0, heads=(2, 2), seed=11)
    spec = task.spec(width=5, temperature=0.2)
    phi = task.phi("train", spec)
    y = jnp.asarray(task.y_train)
    U = _spd(np.random.default_rng(0), 4)
    data = kernel_data(phi)
    assert (data.blocks is not None) == (P <= n0)
    E, g, H = energy_derivatives(U, data, y, 0.2)
    kern = data
    assert float(E) == pytest.approx(float(energy(U, kern, y, 0.2)), rel=1e-12)
    g_ad = jax.jit(jax.grad(energy))(U, kern, y, 0.2)  # compiled: op by op, ~180 small programs per case
    H_ad = jax.jit(jax.hessian(energy))(U, kern, y, 0.2)
    np.testing.assert_allclose(g, g_ad, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(energy_gradient(U, data, y, 0.2), g_ad, rtol=1e-10, atol=1e-12)

    # jnp.linalg.cholesky symmetrises its input, so autodiff differentiates w.r.t. symmetric
    # perturbations: compare the Hessians symmetrised in (pi, rho) and in (sigma, tau)
    def sym(A):
        A = (A + A.transpose(1, 0, 2, 3)) / 2
        return (A + A.transpose(0, 1, 3, 2)) / 2

    np.testing.assert_allclose(sym(H), sym(H_ad), rtol=1e-9, atol=1e-11)
    # and against central finite differences of the analytic gradient along a symmetric direction
    D = jnp.asarray(np.random.default_rng(1).standard_normal((4, 4)))
    D = (D + D.T) / 2
    eps = 1e-5
    fd = (energy_gradient(U + eps * D, data, y, 0.2) - energy_gradient(U - eps * D, data, y, 0.2)) / (2 * eps)
    np.testing.assert_allclose(jnp.einsum("prst,st->pr", H, D), fd, rtol=1e-6, atol=1e-8)


def test_u_l_root_solves_its_stationarity_equation():
    spec = NetworkSpec(heads=(2, 3), n0=4, width=(7, 11, 5), variances=(1.0, 0.7, 1.6, 0.9))
    rng = np.random.default_rng(1)
    U1 = _spd(rng, 6)
    U_a = jnp.asarray(0.8)
    U2 = u_l_root(U1, U_a, 2, spec)
    assert float(jnp.linalg.eigvalsh(U2)[0]) > 0
    g = jax.grad(lambda U: entropy(U_a, [U1, U], spec))(U2)
    assert float(jnp.max(jnp.abs(g))) < 1e-9 * spec.widths[1]


@pytest.mark.parametrize(
    "heads, width, variances",
    [((2, 2), (5, 7, 6), (1.0, 1.2, 0.8, 1.1)), ((3,), (6, 4), (1.1, 0.9, 1.3)), ((2, 1, 2), (5, 6, 7, 4), (1.0,) * 5)],
    ids=["L2", "L1", "L3"],
)
def test_newton_hessian_matches_autodiff(heads, width, variances):
    """The Newton step's closed-form gradient and Hessian in theta (entropy, energy, log-Cholesky chain rule)
    against JAX's derivatives of the reduced action, for one, two and three layers."""
    task = random_task(P=12, n0=4, heads=heads, seed=2)
    spec = task.spec(width=width, temperature=0.1, variances=variances)
    phi = task.phi("train", spec)
    y = jnp.asarray(task.y_train)
    rng = np.random.default_rng(3)
    theta = pack_cholesky([_spd(rng, spec.p(l)) for l in range(1, spec.n_layers + 1)])
    hyper, data = Hyper.from_spec(spec), kernel_data(phi)
    f, g, H, _, _ = _newton_data(theta, hyper, data, y)
    np.testing.assert_allclose(g, jax.grad(_value)(theta, hyper, data, y), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(H, jax.hessian(_value)(theta, hyper, data, y), rtol=1e-8, atol=1e-9)


def test_no_data_minimiser_is_the_gp_value_from_random_starts():
    """Phi = 0 makes E constant: the minimiser is U_l = prod sigma^2 I (theory.md §4.6, §6.7)."""
    spec = NetworkSpec(heads=(2, 2), n0=4, width=(6, 8, 5), variances=(1.0, 0.7, 1.6, 0.9), temperature=0.1)
    phi = jnp.zeros((12, 4, 4))  # same shapes as the other solver tests: one compilation
    y = jnp.ones(12)
    rng = np.random.default_rng(4)
    for _ in range(2):
        sol = solve(spec, phi, y, init=[_spd(rng, 4), _spd(rng, 2)])
        assert sol.status.converged and sol.status.hessian_pd
        np.testing.assert_allclose(sol.Us[1], 0.9 * 1.6 * np.eye(2), rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(sol.Us[0], 0.9 * 1.6 * 0.7 * np.eye(4), rtol=1e-8, atol=1e-9)
        assert float(sol.U_a) == pytest.approx(0.9, rel=1e-8)


def test_random_starts_reach_the_same_minimum_and_match_reference():
    task = random_task(P=12, n0=4, heads=(2, 2), seed=5)
    spec = task.spec(width=6, temperature=0.05)
    phi, y = task.phi("train", spec), task.y_train
    sol = solve(spec, phi, y)
    st = sol.status
    assert st.converged and st.hessian_pd and st.grad_norm <= 1e-9 and st.iterations > 0
    assert min(st.min_eig_U) > 0
    rng = np.random.default_rng(6)
    for _ in range(3):
        other = solve(spec, phi, y, init=[_spd(rng, 4) * 3, _spd(rng, 2)])
        assert other.status.converged
        np.testing.assert_allclose(other.U, sol.U, rtol=1e-7, atol=1e-8 * float(jnp.abs(sol.U).max()))
    ref = reference_solve(spec, phi, y)
    assert ref.change < 1e-12
    for a, b in zip(sol.Us, ref.Us):
        assert float(jnp.linalg.norm(a - b) / jnp.linalg.norm(b)) < 1e-6
    # the GP point is not the solution here (the data move U)
    assert float(jnp.max(jnp.abs(sol.U - jnp.eye(4)))) > 1e-2


def test_bkr_scalar_reduction():
    """H = 1, L = 1, S = 1: deep linear network; the scalar BKR equation (§4.5) by brentq."""
    rng = np.random.default_rng(7)
    P, n0, N, T = 15, 6, 4, 0.1
    spec = NetworkSpec(heads=(1,), n0=n0, width=N, variances=(1.0, 0.8, 1.3), temperature=T)
    x = rng.standard_normal((P, n0))
    y = np.sign(rng.standard_normal(P))
    phi = jnp.asarray(x[:, :, None] / np.sqrt(n0))  # S = 1 token, one path, sigma_0 = 1
    sol = solve(spec, phi, y)
    assert sol.status.ok
    K0 = x @ x.T / n0
    s2_1, s2_a = 0.8, 1.3

    def u_a(u):
        b = s2_a * (N / N - 1.0)
        c = s2_a * u / s2_1
        return 0.5 * (-b + np.sqrt(b * b + 4 * c))

    def F(u):
        K = u * K0
        G = np.linalg.inv(K + T * np.eye(P))
        return u / (u_a(u) * s2_1) - 1.0 - (y @ G @ K @ G @ y - np.trace(G @ K)) / N

    u_star = brentq(F, 1e-6, 1e3, xtol=1e-15, rtol=1e-14)
    assert float(sol.U[0, 0]) == pytest.approx(u_star, rel=1e-8)
    assert float(sol.U_a) == pytest.approx(u_a(u_star), rel=1e-8)


def _above_capacity(T):
    rng = np.random.default_rng(8)
    P, n0 = 15, 6  # rank K <= n0 < P
    spec = NetworkSpec(heads=(1,), n0=n0, width=5, temperature=T)
    phi = jnp.asarray(rng.standard_normal((P, n0, 1)) / np.sqrt(n0))
    return spec, phi, np.sign(rng.standard_normal(P))


def test_ill_posed_case_is_flagged():
    """T -> 0 above capacity (P > rank K) on the P x P route: the part of the energy that depends on U is lost to
    rounding next to |y_perp|^2 / T, and the solver must not report success."""
    spec, phi, y = _above_capacity(1e-13)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        sol = solve(spec, phi, y, max_iter=50, path_space="dense")
    assert not sol.status.ok
    assert any(issubclass(w.category, TheoryWarning) for w in rec)


def test_path_space_holds_the_zero_temperature_limit_above_capacity():
    """The same problem in path space (docs/theory.md §4.10): the U-dependent part lives in r = 6 dimensions, the
    constant |y_perp|^2 / T is added apart, so the solve converges and U* is continuous as T -> 0 (the limit
    reached to 1e-9 by T = 1e-10); the action is the offset plus a finite remainder."""
    Us = {}
    for T in (1e-13, 1e-10, 1e-6):
        spec, phi, y = _above_capacity(T)
        sol = solve(spec, phi, y, max_iter=50, path_space="path")
        assert sol.status.ok, sol.status.message
        Us[T] = float(sol.U[0, 0])
    assert Us[1e-10] == pytest.approx(Us[1e-13], rel=1e-9)
    assert Us[1e-6] == pytest.approx(Us[1e-13], rel=1e-5)
    assert Us[1e-6] != pytest.approx(Us[1e-13], rel=1e-9)  # the check can tell temperatures apart


@pytest.mark.slow
@pytest.mark.parametrize("N", [10, 100, 1000])
def test_markov_four_paths_agrees_with_reference(N):
    from bayes_attn.tasks import markov_task

    task = markov_task(P=100, n_test=10)
    spec = task.spec(width=N, temperature=0.01)
    phi = task.phi("train", spec)
    sol = solve(spec, phi, task.y_train)
    assert sol.status.ok
    ref = reference_solve(spec, phi, task.y_train)
    for a, b in zip(sol.Us, ref.Us):
        assert float(jnp.linalg.norm(a - b) / jnp.linalg.norm(b)) < 1e-6
