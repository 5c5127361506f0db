"""Every sampler on every model it can sample, against the exact posterior of a one-path network
(quadrature, tests/exact_one_path.py), within Monte Carlo error; and the saddle-point theory against the
exact finite-width answer as the width grows.  Fast counterparts of the slow agreement tests."""

import numpy as np
import pytest
from conftest import random_task
from exact_one_path import exact_predictive

from bayes_attn.theory import predict, solve

T = 0.3
VAR = (1.0, 0.8, 1.3)


@pytest.fixture(scope="module")
def problem():
    task = random_task(P=6, Q=4, S=2, n0=3, heads=(1,), seed=21)
    spec = task.spec(width=3, temperature=T, variances=VAR)
    phi_tr, phi_te = np.asarray(task.phi("train", spec)), np.asarray(task.phi("test", spec))
    return task, spec, exact_predictive(phi_tr, phi_te, task.y_train, spec.widths, spec.variances, T)


def test_reference_agrees_with_weight_space_importance_sampling(problem):
    """The quadrature against prior draws of the weights, weighted by the collapsed likelihood: an
    independent route (Gaussian weights -> W_eff -> U_1, no Gamma densities)."""
    task, spec, (mean, var) = problem
    rng = np.random.default_rng(0)
    n, (N1, Na) = 400_000, spec.widths
    V1 = np.sqrt(VAR[1]) * rng.standard_normal((n, Na, N1))
    a = np.sqrt(VAR[2]) * rng.standard_normal((n, Na))
    w = np.einsum("kji,kj->ki", V1, a) / np.sqrt(Na)  # W_eff of the single path
    u = np.sum(w * w, axis=1) / N1  # U_1 (docs/theory.md eq. (4.3c))
    p0 = np.asarray(task.phi("train", spec))[:, :, 0]
    p1 = np.asarray(task.phi("test", spec))[:, :, 0]
    lam, Q = np.linalg.eigh(p0 @ p0.T)
    z, kq = Q.T @ task.y_train, Q.T @ (p0 @ p1.T)
    d = u[:, None] * lam[None, :] + T
    logw = -0.5 * (np.sum(z**2 / d, axis=1) + np.sum(np.log(d), axis=1))
    wt = np.exp(logw - logw.max())
    wt /= wt.sum()
    m = u[:, None] * ((z / d) @ kq)
    est = wt @ m
    se = np.sqrt(wt**2 @ (m - est) ** 2)  # self-normalised IS standard error
    assert np.all(np.abs(est - mean) < 5 * se + 1e-12), (est, mean, se)


CASES = [
    ("nuts", "weights"),
    ("nuts", "collapsed"),
    ("nuts", "order_parameters"),
    ("mala", "collapsed"),
    ("mala", "order_parameters"),
    ("ula", "collapsed"),
    ("gibbs", "weights"),
    ("gibbs", "collapsed"),
]


def _run_case(task, spec, kind, model):
    """Sample the problem with ``kind`` / ``model``: predictor mean and variance, MCSEs, max R-hat (in process:
    the memory-map fixture of tests/conftest.py keeps the worker below vm.max_map_count, docs/design.md)."""
    import arviz as az

    from bayes_attn.inference import SamplerConfig, predictor_statistics, sample

    long = kind in ("mala", "ula")
    cfg = SamplerConfig(
        kind=kind,
        model=model,
        chains=4,
        warmup=500 if long else 300,
        draws=8000 if long else 1500,
        thinning=4 if long else 1,
        seed=3,
        progress_bar=False,
        checkpoint_every=500,
    )
    dt = sample(task, spec, cfg)
    post = dt["posterior"].ds
    st = predictor_statistics(dt)
    f = post["f"]
    second = f**2 + (post["f_var"] if "f_var" in post else 0.0)
    return {
        "mean": np.asarray(st["mean"]),
        "var": np.asarray(st["var"]),
        "mcse_mean": np.asarray(az.mcse(f, method="mean")),
        "mcse_second": np.asarray(az.mcse(second, method="mean")),
        "rhat": float(np.max(np.asarray(az.rhat(f)))),
    }


@pytest.mark.parametrize("kind,model", CASES, ids=[f"{k}-{m}" for k, m in CASES])
def test_sampler_recovers_the_exact_posterior(problem, kind, model):
    """Posterior predictive mean and variance of f on 4 test inputs: |sampled - exact| < 5 MCSE (ArviZ);
    ULA, biased by O(h) (h = 0.1 / lambda_max, docs/samplers.md), gets 8 % of the variance on top."""
    task, spec, (mean, var) = problem
    r = _run_case(task, spec, kind, model)
    st_mean, st_var, mcse_mean, mcse_second = r["mean"], r["var"], r["mcse_mean"], r["mcse_second"]
    assert r["rhat"] < 1.05
    assert np.all(np.abs(st_mean - mean) < 5 * mcse_mean + 1e-9), (st_mean, mean, mcse_mean)
    # Var f = E[f^2] - E[f]^2: error <= MCSE(E[f^2]) + 2 |E f| MCSE(E f)
    tol = 5 * (mcse_second + 2 * np.abs(mean) * mcse_mean) + (0.08 * var if kind == "ula" else 0.0)
    assert np.all(np.abs(st_var - var) < tol), (st_var, var, tol)


def test_saddle_point_approaches_the_exact_posterior_as_one_over_width():
    """docs/theory.md §5.2: the theory is the Laplace limit of the exact density, so the gap between the exact
    posterior mean of f and the saddle-point predictor falls like 1/N (no sampling: quadrature vs solver)."""
    task = random_task(P=6, Q=4, S=2, n0=3, heads=(1,), seed=21)
    gaps = []
    for N in (30, 300, 3000):
        spec = task.spec(width=N, temperature=T, variances=VAR)
        phi_tr, phi_te = task.phi("train", spec), task.phi("test", spec)
        exact, _ = exact_predictive(
            np.asarray(phi_tr), np.asarray(phi_te), task.y_train, spec.widths, spec.variances, T
        )
        sol = solve(spec, phi_tr, task.y_train)
        assert sol.status.ok
        theory, _ = predict(sol.U, phi_tr, phi_te, task.y_train, T)
        gaps.append(float(np.linalg.norm(exact - np.asarray(theory))))
    r1, r2 = gaps[1] / gaps[0], gaps[2] / gaps[1]
    assert 0.06 < r1 < 0.16 and 0.07 < r2 < 0.13, gaps
