"""Ridge / replica theory of the Gaussian-spin scenario vs closed forms and simulation (potts.md §9.2, §10.6)."""

import numpy as np
import pytest

import bayes_attn  # noqa: F401
from bayes_attn import InputError
from bayes_attn.potts import gaussian_teacher, isotropic_coupling_error, kappa, lambda_opt, ridge_theory, simulate_ridge


def test_kappa_solves_fixed_point():
    eigs = np.random.default_rng(0).uniform(0.2, 2.0, 50)
    for M, lam in [(25, 1e-2), (100, 1e-1), (40, 0.0)]:
        k = kappa(eigs, M, lam)
        rhs = k * (1 - np.sum(eigs / (eigs + k)) / M)
        assert np.isclose(rhs, lam, atol=1e-10)
    assert kappa(eigs, 100, 0.0) == 0.0


@pytest.mark.parametrize("alpha", [0.25, 0.5, 2.0, 4.0])
def test_isotropic_closed_form(alpha):
    p, r, s2 = 80, 0.7, 0.4
    w = np.full(p, np.sqrt(r / p))
    th = ridge_theory(np.eye(p), w, s2, int(alpha * p), 0.0)
    assert np.isclose(th["coupling_error"], isotropic_coupling_error(alpha, r, s2), rtol=1e-9)


def test_isotropic_lambda_opt():
    p, r, s2, alpha = 60, 0.5, 0.3, 1.5
    w = np.full(p, np.sqrt(r / p))
    assert np.isclose(lambda_opt(np.eye(p), w, s2, int(alpha * p)), s2 / (alpha * r), rtol=1e-3)


def test_peak_at_interpolation_threshold_and_regularised():
    T = gaussian_teacher(60, 3.0, seed=1)
    S, w, s2 = T.site(0)
    e = lambda M, lam: ridge_theory(S, w, s2, M, lam)["test_mse"]  # noqa: E731
    assert e(57, 1e-4) > 5 * e(30, 1e-4) and e(57, 1e-4) > 5 * e(120, 1e-4)
    assert e(57, 1e-1) < e(57, 1e-4) / 5


@pytest.mark.parametrize("alpha", [0.5, 2.0, 4.0])
def test_theory_matches_simulation(alpha):
    """Theory (with the actual Sigma, w* per site) vs exact-ridge simulation, within 3 s.e. + 3% (§10.6)."""
    L = 100
    T = gaussian_teacher(L, 3.0, seed=2)
    r = simulate_ridge(T, range(6), int(round(alpha * (L - 1))), 1e-3, reps=6, seed=3)
    for q in ("rel_coupling_error", "test_mse"):
        tol = 3 * r[q + "_se"] + 0.03 * r["theory_" + q]
        assert abs(r[q] - r["theory_" + q]) < tol, (q, r)


def test_bad_teacher():
    with pytest.raises(InputError, match="^nu:"):
        gaussian_teacher(10, 1.5)
