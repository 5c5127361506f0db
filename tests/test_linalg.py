"""bayes_attn.linalg against dense formulas: Gaussian log marginal (scipy), energy, GP posterior with the
explicit inverse ``(K + T I)^-1``, both kernel assembly routes, and the non-PD failure values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from bayes_attn.linalg import (
    apply_kernel,
    cholesky_factor,
    cholesky_log_jacobian,
    cholesky_theta,
    diagonal,
    log_det_from_cholesky,
    pack_cholesky,
    pack_symmetric,
    symmetric_to_packed_matrix,
    tril_size,
    unpack_cholesky,
    unpack_symmetric,
    energy,
    gaussian_log_marginal,
    gp_posterior,
    kernel_data,
    kernel_diag,
    kernel_energy,
    kernel_matrix,
    use_blocks,
)


def _problem(P=7, Q=5, d=4, n=3, seed=0):
    rng = np.random.default_rng(seed)
    phi_tr, phi_te = rng.standard_normal((P, d, n)), rng.standard_normal((Q, d, n))
    A = rng.standard_normal((n, n))
    U = A @ A.T / n + 0.3 * np.eye(n)
    return phi_tr, phi_te, U, np.sign(rng.standard_normal(P))


def _dense_kernel(a, b, U):
    return np.einsum("mip,pq,niq->mn", a, U, b)


def test_log_marginal_and_energy_equal_dense_formulas():
    phi, _, U, y = _problem()
    T = 0.2
    K = _dense_kernel(phi, phi, U)
    cov = K + T * np.eye(len(y))
    want = stats.multivariate_normal(np.zeros(len(y)), cov).logpdf(y)
    assert float(gaussian_log_marginal(jnp.asarray(K), jnp.asarray(y), T)) == pytest.approx(want, rel=1e-12)
    e = np.linalg.slogdet(cov)[1] + y @ np.linalg.solve(cov, y)
    assert float(energy(jnp.asarray(K), y, T)) == pytest.approx(e, rel=1e-12)
    # not positive definite: -inf log-likelihood, +inf energy (never a finite value)
    bad = -5.0 * K
    assert float(gaussian_log_marginal(jnp.asarray(bad), jnp.asarray(y), T)) == -np.inf
    assert float(energy(jnp.asarray(bad), y, T)) == np.inf


def _plain_log_marginal(K, y, T):
    """``ln N(y; 0, K + T I)`` through JAX's dense log-pdf: differentiated by JAX's own rules (LU, no custom JVP)."""
    return jax.scipy.stats.multivariate_normal.logpdf(y, jnp.zeros_like(y), K + T * jnp.eye(y.shape[0]))


def test_gaussian_log_marginal_derivatives_are_the_closed_form():
    """The custom JVP (docs/theory.md eq. (5.1e)) against JAX's derivatives of a dense log-pdf and against central
    differences, first and second order, for K (an unsymmetric tangent too), y and T; zero gradient where not PD."""
    phi, _, U, y = _problem(seed=3)
    T = 0.2
    K = jnp.asarray(_dense_kernel(phi, phi, U))
    y = jnp.asarray(y)
    # every derivative compiled (op by op this test compiled some 290 small programs)
    got = jax.jit(jax.grad(gaussian_log_marginal, argnums=(0, 1, 2)))(K, y, T)
    want = jax.jit(jax.grad(_plain_log_marginal, argnums=(0, 1, 2)))(K, y, T)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
    rng = np.random.default_rng(4)
    dK, dy = jnp.asarray(rng.standard_normal(K.shape)), jnp.asarray(rng.standard_normal(y.shape))
    line = jax.jit(lambda t: gaussian_log_marginal(K + t * dK * 1e-2, y + t * dy, T + 0.05 * t))
    h = 1e-5
    fd = (line(h) - line(-h)) / (2 * h)
    assert float(jax.jit(jax.grad(line))(0.0)) == pytest.approx(float(fd), rel=1e-7)
    fd2 = (line(1e-3) - 2 * line(0.0) + line(-1e-3)) / 1e-6
    plain = lambda t: _plain_log_marginal(K + t * dK * 1e-2, y + t * dy, T + 0.05 * t)  # noqa: E731
    second = float(jax.jit(jax.hessian(line))(0.0))
    assert second == pytest.approx(float(jax.jit(jax.hessian(plain))(0.0)), rel=1e-8)
    assert second == pytest.approx(float(fd2), rel=1e-4)
    bad = jax.jit(jax.grad(gaussian_log_marginal, argnums=(0, 1, 2)))(-5.0 * K, y, T)
    assert all(np.all(np.asarray(g) == 0.0) for g in bad)


def _plain_energy(phi, U, y, T):
    """``E(U)`` through JAX's dense log-pdf of the contracted kernel: differentiated by JAX's own rules."""
    return -2.0 * _plain_log_marginal(kernel_matrix(phi, phi, U), y, T) - y.shape[0] * jnp.log(2.0 * jnp.pi)


# r = d n > P from the blocks (through G), r = P from the blocks (path space's square case), r < P from the
# features, and n > d (the features by the policy)
@pytest.mark.parametrize("shape, max_floats", [((7, 4, 3), 1e9), ((12, 4, 3), 1e9), ((30, 4, 3), 0), ((12, 2, 5), 1e9)])
def test_kernel_energy_derivatives_are_the_feature_form(shape, max_floats):
    """The derivative of :func:`kernel_energy` in U (docs/theory.md eq. (4.5h): one Cholesky factor and one
    triangular solve of the features) against JAX's derivatives of a dense log-pdf, first and second order, at a
    positive-definite and at a singular U, from the blocks and from the features; central differences along a line;
    derivatives in T and y through the fallback; +inf and a zero gradient where not PD."""
    P, d, n = shape
    phi, _, U, y = _problem(P=P, d=d, n=n, seed=5)
    T = 0.05
    kd, y = kernel_data(phi, max_floats=max_floats), jnp.asarray(y)
    assert (kd.blocks is None) == (max_floats == 0 or n > d)  # the assembly policy
    phi = jnp.asarray(phi)
    b = np.random.default_rng(6).standard_normal((n, 1))
    for U_ in (jnp.asarray(U), jnp.asarray(b @ b.T)):
        ours = jax.jit(lambda V: kernel_energy(kd, V, y, T))
        plain = jax.jit(lambda V: _plain_energy(phi, V, y, T))
        assert float(ours(U_)) == pytest.approx(float(plain(U_)), rel=1e-11)
        np.testing.assert_allclose(jax.jit(jax.grad(ours))(U_), jax.jit(jax.grad(plain))(U_), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(
            jax.jit(jax.hessian(ours))(U_), jax.jit(jax.hessian(plain))(U_), rtol=1e-8, atol=1e-8
        )
    dU = jnp.asarray(np.random.default_rng(7).standard_normal((n, n)))
    line = jax.jit(lambda t: kernel_energy(kd, jnp.asarray(U) + t * (dU + dU.T), y, T))
    h = 1e-5
    assert float(jax.jit(jax.grad(line))(0.0)) == pytest.approx(float((line(h) - line(-h)) / (2 * h)), rel=1e-6)
    for arg in (1, 2):  # y and T: the other arguments' tangents
        got = jax.jit(jax.grad(lambda *a: kernel_energy(kd, *a), argnums=arg))(jnp.asarray(U), y, T)
        want = jax.jit(jax.grad(lambda *a: _plain_energy(phi, *a), argnums=arg))(jnp.asarray(U), y, T)
        np.testing.assert_allclose(got, want, rtol=1e-9)
    bad = -10.0 * jnp.eye(n)
    assert float(kernel_energy(kd, bad, y, T)) == np.inf
    assert np.all(np.asarray(jax.grad(lambda V: kernel_energy(kd, V, y, T))(bad)) == 0.0)


def test_gp_posterior_equals_the_explicit_inverse():
    """mean = k^T (K + T I)^-1 y, var = k** - k^T (K + T I)^-1 k, with a dense inverse (docs/theory.md eqs. (4.2b), (4.2c))."""
    phi_tr, phi_te, U, y = _problem(seed=1)
    T = 0.15
    K, k, kss = _dense_kernel(phi_tr, phi_tr, U), _dense_kernel(phi_tr, phi_te, U), _dense_kernel(phi_te, phi_te, U)
    G = np.linalg.inv(K + T * np.eye(len(y)))
    mean, var = gp_posterior(jnp.asarray(K), jnp.asarray(k), jnp.asarray(np.diag(kss)), jnp.asarray(y), T)
    np.testing.assert_allclose(mean, k.T @ G @ y, rtol=1e-10)
    np.testing.assert_allclose(var, np.diag(kss - k.T @ G @ k), rtol=1e-9, atol=1e-12)
    # the conditional law of f(x*) given noisy y under the joint Gaussian: same numbers by conditioning
    joint = np.block([[K + T * np.eye(len(y)), k], [k.T, kss]])
    cond = joint[len(y) :, len(y) :] - joint[len(y) :, : len(y)] @ np.linalg.solve(joint[: len(y), : len(y)], k)
    np.testing.assert_allclose(var, np.diag(cond), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("max_floats", [1e9, 0])
def test_both_assembly_routes_give_the_kernel(max_floats):
    phi_tr, phi_te, U, _ = _problem(seed=2)
    kd = kernel_data(jnp.asarray(phi_tr), jnp.asarray(phi_te), max_floats=max_floats)
    assert (kd.blocks is not None) == (max_floats > 0)
    np.testing.assert_allclose(apply_kernel(kd, jnp.asarray(U)), _dense_kernel(phi_tr, phi_te, U), rtol=1e-12)
    np.testing.assert_allclose(kernel_matrix(phi_tr, phi_te, U), _dense_kernel(phi_tr, phi_te, U), rtol=1e-12)
    np.testing.assert_allclose(kernel_diag(phi_te, U), np.diag(_dense_kernel(phi_te, phi_te, U)), rtol=1e-12)


def test_assembly_policy():
    """Precompute iff the blocks fit and an evaluation from them is cheaper (n_paths <= features)."""
    assert use_blocks(100, 1000, 231, 4)  # hidden-Markov task: 1.6e6 numbers
    assert not use_blocks(600, 600, 16, 16)  # 16-path digits: 9.2e7 numbers
    assert not use_blocks(10, 10, 3, 4)  # more paths than features: contracting is cheaper
    assert use_blocks(10, 10, 4, 4) and not use_blocks(10, 10, 4, 4, max_floats=1e3)


# ---- coordinates of positive-definite matrices (docs/theory.md eqs. (4.7a), (5.2d)) ----------------


def _random_spd(rng, p, scale=1.0):
    A = rng.standard_normal((p, p))
    return scale * (A @ A.T / p + 0.5 * np.eye(p))


@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_cholesky_log_jacobian_matches_autodiff(p):
    theta = jnp.asarray(np.random.default_rng(p).normal(scale=0.6, size=tril_size(p)))
    rows, cols = np.triu_indices(p)

    def upper(t):
        L = cholesky_factor(t, p)
        return (L @ L.T)[rows, cols]

    J = jax.jacfwd(upper)(theta)
    np.testing.assert_allclose(np.linalg.slogdet(J)[1], cholesky_log_jacobian(theta, p), rtol=1e-12)


def test_diagonal_and_log_det_are_numpys():
    rng = np.random.default_rng(11)
    for shape in [(1, 1), (3, 3), (2, 5, 5)]:
        a = rng.standard_normal(shape)
        np.testing.assert_array_equal(diagonal(jnp.asarray(a)), np.diagonal(a, axis1=-2, axis2=-1))
    U = _random_spd(rng, 6)
    np.testing.assert_allclose(log_det_from_cholesky(np.linalg.cholesky(U)), np.linalg.slogdet(U)[1], rtol=1e-13)
    # the gradient of the strided slice is the dense one: d/dC_ij of sum_i ln C_ii is delta_ij / C_ii
    C = np.linalg.cholesky(U)
    np.testing.assert_allclose(jax.grad(log_det_from_cholesky)(jnp.asarray(C)), 2.0 * np.diag(1.0 / np.diag(C)))


def test_cholesky_theta_inverts_factor():
    rng = np.random.default_rng(3)
    U = _random_spd(rng, 4)
    L = cholesky_factor(cholesky_theta(jnp.asarray(U)), 4)
    np.testing.assert_allclose(L @ L.T, U, atol=1e-13)
    assert np.all(np.diag(L) > 0) and np.allclose(np.triu(L, 1), 0)


def test_packings_roundtrip():
    rng = np.random.default_rng(7)
    Us = [jnp.asarray(_random_spd(rng, p)) for p in (4, 2, 1)]
    for a, b in zip(unpack_cholesky(pack_cholesky(Us), [4, 2, 1]), Us):
        np.testing.assert_allclose(a, b, atol=1e-13)
    for a, b in zip(unpack_symmetric(pack_symmetric(Us), [4, 2, 1]), Us):
        np.testing.assert_array_equal(a, b)
    D = symmetric_to_packed_matrix(3)
    U = _random_spd(rng, 3)
    np.testing.assert_array_equal(D @ np.asarray(pack_symmetric([jnp.asarray(U)])), U.ravel())
