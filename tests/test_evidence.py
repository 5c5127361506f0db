"""Log evidence: saddle point with its O(1) terms and exact finite-N (docs/evidence.md §1–§3).

Closed form: the deep-linear chain (L = 1, H = 1, one path), where ``U_1 = c X Y`` with ``X ~ chi2_{N_a}``,
``Y ~ chi2_{N_1}`` independent (docs/theory.md eq. (5.2a)), the density of ``XY`` is a Bessel function, and
the evidence is a 1-D integral done by quadrature (docs/evidence.md eq. (E5)).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_task
from scipy import integrate, stats
from scipy.special import gammaln, kve

from bayes_attn import linalg
from bayes_attn.network import NetworkSpec
from bayes_attn.theory import (
    exact_log_evidence,
    fisher_attention_grad,
    log_evidence,
    saddle_attention_grad,
    saddle_log_evidence,
    solve,
)
from bayes_attn.theory._exact import prior_log_density


def _log_density_product_chi2(z, m, n):
    """ln pdf of ``X Y``, ``X ~ chi2_m``, ``Y ~ chi2_n``: ``2^{1-(m+n)/2} z^{(m+n)/4-1} K_{(m-n)/2}(sqrt z) / (G G)``."""
    s = np.sqrt(z)
    return (
        (1 - 0.5 * (m + n)) * math.log(2)
        + ((m + n) / 4 - 1) * np.log(z)
        + np.log(kve(0.5 * (m - n), s))
        - s
        - gammaln(0.5 * m)
        - gammaln(0.5 * n)
    )


def quadrature_log_evidence(phi, y, spec):
    """ln p(y) of the one-path chain by quadrature over ``t = ln(XY)`` (docs/evidence.md eq. (E5))."""
    N1, Na = spec.widths
    s0, s1, sa = spec.variances
    c = sa * s1 / (Na * N1)
    K0 = np.asarray(linalg.kernel_matrix(phi, phi, np.eye(1)))
    lam, V = np.linalg.eigh(K0)
    lam = np.maximum(lam, 0.0)  # K0 is PSD of rank <= N0; round-off below 0
    proj = (V.T @ np.asarray(y)) ** 2
    width = math.sqrt(2.0 / N1 + 2.0 / Na)
    t = np.linspace(math.log(N1 * Na) - 60 * width - 5, math.log(N1 * Na) + 20 * width + 5, 200001)
    z = np.exp(t)
    var = c * z[:, None] * lam[None, :] + spec.temperature
    loglik = -0.5 * (np.sum(np.log(var) + proj / var, axis=1) + len(y) * math.log(2 * math.pi))
    f = _log_density_product_chi2(z, Na, N1) + t + loglik
    top = f.max()
    return top + math.log(integrate.trapezoid(np.exp(f - top), t))


def _chain(N, P=8, seed=3, T=0.3):
    task = random_task(P=P, Q=3, S=2, n0=3, heads=(1,), seed=seed)
    spec = task.spec(width=N, temperature=T, variances=[1.0, 0.8, 1.3])
    return task, spec


def test_bessel_density_matches_convolution():
    m, n = 5, 9
    for z in (3.0, 40.0, 150.0):
        conv = integrate.quad(lambda x: stats.chi2.pdf(x, m) * stats.chi2.pdf(z / x, n) / x, 0, np.inf)[0]
        assert math.exp(_log_density_product_chi2(z, m, n)) == pytest.approx(conv, rel=1e-7)


@pytest.mark.parametrize("N", [4, 20])
def test_exact_evidence_closed_form(N):
    """Importance sampling vs quadrature on the deep-linear chain, within 4 MCSE."""
    task, spec = _chain(N)
    ref = quadrature_log_evidence(task.phi("train", spec), task.y_train, spec)
    ex = exact_log_evidence(task, spec, n_pairs=3000, seed=1)
    assert ex.mcse < 0.02
    assert abs(ex.log_evidence - ref) < 4 * ex.mcse + 1e-9, (ex.log_evidence, ref, ex.mcse)


def test_saddle_evidence_error_shrinks_like_one_over_N():
    """The saddle value with its Laplace term approaches the quadrature value like 1/N (docs/evidence.md §1)."""
    errs = []
    for N in (30, 300, 3000):
        task, spec = _chain(N)
        ref = quadrature_log_evidence(task.phi("train", spec), task.y_train, spec)
        errs.append(log_evidence(task, spec).log_evidence - ref)
    errs = np.abs(errs)
    ratios = errs[:-1] / errs[1:]
    assert np.all((ratios > 6) & (ratios < 15)), errs  # ~10 per decade
    assert errs[-1] < 1e-3


def test_saddle_pieces():
    """Each term of eq. (E1): action, measure, Wishart constants, Laplace determinant, Gaussian constant."""
    task = random_task(P=10, Q=3, S=3, n0=4, heads=(2, 1), seed=4)
    spec = task.spec(width=[9, 7, 11], temperature=0.2, variances=[1.1, 0.9, 1.2, 0.7])
    phi, y = task.phi("train", spec), task.y_train
    sol = solve(spec, phi, y)
    ev = saddle_log_evidence(spec, phi, y, solution=sol)
    assert ev.action_term == pytest.approx(-0.5 * sol.status.action, rel=1e-12)
    assert ev.gaussian_constant == pytest.approx(-5 * math.log(2 * math.pi))
    assert ev.dimension == 1 + 3 + 1
    # prior constants + measure term == normalised prior chain + S_ent/2 (eq. (5.2c))
    from bayes_attn.theory import entropy

    lp = float(prior_log_density(sol.U_a, sol.Us, spec.hyper()))
    S = float(entropy(sol.U_a, sol.Us, spec))
    assert ev.measure_term + ev.wishart_normalizer == pytest.approx(lp + 0.5 * S, rel=1e-10)
    # Laplace determinant vs a finite-difference Hessian of the action in (U_a, packed u)
    from bayes_attn.theory import action

    sizes = [2, 1]
    z0 = np.concatenate([[float(sol.U_a)], np.asarray(linalg.pack_symmetric(sol.Us))])
    kd = linalg.kernel_data(phi)

    hyper, yj = spec.hyper(), jnp.asarray(y)
    A_jit = jax.jit(lambda z, hyper: action(z[0], linalg.unpack_symmetric(z[1:], sizes), hyper, kd, yj))

    def A(z):
        return float(A_jit(jnp.asarray(z), hyper))

    d, h = z0.size, 1e-4
    H = np.empty((d, d))
    for i in range(d):
        for j in range(d):
            e_i, e_j = np.eye(d)[i] * h, np.eye(d)[j] * h
            H[i, j] = (A(z0 + e_i + e_j) - A(z0 + e_i - e_j) - A(z0 - e_i + e_j) + A(z0 - e_i - e_j)) / (4 * h * h)
    lap = 0.5 * d * math.log(2 * math.pi) - 0.5 * np.linalg.slogdet(H / 2)[1]
    assert ev.laplace_term == pytest.approx(lap, abs=1e-4)
    assert ev.hessian_min_eig > 0


def test_no_data_evidence_is_one_plus_O_one_over_N():
    """Laplace's approximation of the normalised prior chain integrates to 1 + O(1/N)."""
    vals = []
    for N in (50, 500, 5000):
        spec = NetworkSpec(heads=(2, 2), n0=3, width=N, variances=[1.0, 0.7, 1.4, 1.2])
        vals.append(saddle_log_evidence(spec, None, jnp.zeros(0), data=False).log_evidence)
    vals = np.abs(vals)
    assert np.all((vals[:-1] / vals[1:] > 7) & (vals[:-1] / vals[1:] < 13)) and vals[-1] < 3e-3, vals


def test_gp_limit_of_saddle_evidence():
    """N -> infinity: ln Z -> ln N(y; 0, K_GP + T I), the GP marginal likelihood (docs/theory.md eq. (4.6c))."""
    task = random_task(P=10, Q=3, S=3, n0=4, heads=(2, 2), seed=6)
    spec = task.spec(width=10**6, temperature=0.3)
    phi = task.phi("train", spec)
    gp = float(linalg.gaussian_log_marginal(linalg.kernel_matrix(phi, phi, jnp.eye(4)), jnp.asarray(task.y_train), 0.3))
    assert log_evidence(task, spec).log_evidence == pytest.approx(gp, abs=1e-4)


# ---- gradients w.r.t. the attention ----------------------------------------------------------------------------
def _w_problem(N, seed=2):
    from bayes_attn.network import path_attention, path_inputs, phi as make_phi, softmax_keys, w_scores

    task = random_task(P=10, Q=3, S=3, n0=4, heads=(2, 2), seed=seed)
    spec = task.spec(width=N, temperature=0.2)
    x = jnp.asarray(task.x_train)
    W0 = [jnp.asarray(l.params["W"]) for l in task.layers]

    def phi_fn(W):
        om = [softmax_keys(w_scores(x, Wl)) for Wl in W]
        return make_phi(path_inputs(x, path_attention(om, spec.readout)), spec.sigma2_input)

    return task, spec, phi_fn, W0


def test_saddle_gradient_matches_resolved_finite_differences():
    task, spec, phi_fn, W0 = _w_problem(12)
    y = task.y_train
    sol = solve(spec, phi_fn(W0), y)
    g = saddle_attention_grad(phi_fn, W0, spec, y, sol)
    rng = np.random.default_rng(0)
    v = [jnp.asarray(rng.standard_normal(W.shape)) for W in W0]
    dd = sum(float(jnp.vdot(a, b)) for a, b in zip(g, v))
    h = 1e-4

    def lead(W):
        return -0.5 * solve(spec, phi_fn(W), y, tol=1e-12, max_iter=400).status.action

    fd = (lead([a + h * b for a, b in zip(W0, v)]) - lead([a - h * b for a, b in zip(W0, v)])) / (2 * h)
    assert dd == pytest.approx(fd, rel=1e-5)


@pytest.mark.slow
def test_fisher_gradient_matches_finite_differences_of_exact_evidence():
    """Fisher's identity (self-normalised IS) vs central differences of the exact evidence.

    The two evidences use common random numbers (same seed; each with its own mode and proposal), so the
    difference quotient is a second, independent-in-form estimator of the same derivative; they must agree
    within 4 MCSE of the Fisher estimate.
    """
    task, spec, phi_fn, W0 = _w_problem(30, seed=5)
    y = task.y_train
    rng = np.random.default_rng(1)
    v = [jnp.asarray(rng.standard_normal(W.shape)) for W in W0]
    ex = exact_log_evidence(None, spec, n_pairs=3000, seed=2, phi=phi_fn(W0), y=y)
    _, dd, se = fisher_attention_grad(phi_fn, W0, spec, y, ex, direction=v)
    h = 1e-3
    ep = exact_log_evidence(None, spec, n_pairs=3000, seed=2, phi=phi_fn([a + h * b for a, b in zip(W0, v)]), y=y)
    em = exact_log_evidence(None, spec, n_pairs=3000, seed=2, phi=phi_fn([a - h * b for a, b in zip(W0, v)]), y=y)
    fd = (ep.log_evidence - em.log_evidence) / (2 * h)
    assert abs(dd - fd) < 4 * se, (dd, se, fd)
    assert se < 0.05 * abs(dd)


def test_fisher_gradient_approaches_saddle_gradient():
    """At large N the exact gradient tends to the envelope gradient (relative O(1/N))."""
    task, spec, phi_fn, W0 = _w_problem(3000, seed=5)
    y = task.y_train
    rng = np.random.default_rng(1)
    v = [jnp.asarray(rng.standard_normal(W.shape)) for W in W0]
    sol = solve(spec, phi_fn(W0), y)
    g = saddle_attention_grad(phi_fn, W0, spec, y, sol)
    ds = sum(float(jnp.vdot(a, b)) for a, b in zip(g, v))
    ex = exact_log_evidence(None, spec, n_pairs=500, seed=2, phi=phi_fn(W0), y=y, solution=sol)
    _, dd, se = fisher_attention_grad(phi_fn, W0, spec, y, ex, direction=v)
    assert dd == pytest.approx(ds, rel=3e-3, abs=4 * se)
