"""The training set in path space (bayes_attn.linalg._pathspace, docs/theory.md §4.10) against the P x P route.

Every quantity the consumers take from the kernel (energy, marginal likelihood, gradient and Hessian in U, the
traces of the saddle-point equations, test predictions) is computed both ways on the same data and must agree
to 1e-9 relative, at P = 50, 300, 2000, on the Markov task, digits episodes and random features with r < P and
r > P, at a positive-definite and at a singular U.  The dense numbers are those of the P x P formulas, which
tests/test_linalg.py checks against SciPy and explicit inverses.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_attn import InputError
from bayes_attn.linalg import (
    energy_derivatives,
    energy_gradient,
    kernel_energy,
    kernel_log_marginal,
    path_space,
    path_space_blocks,
    train_kernel_data,
    use_path_space,
)
from bayes_attn.network import HeadLayer, predictive, training_kernels
from bayes_attn.tasks import digits_episodes, markov_task

RTOL = 1e-9


def _random(P, d, n, seed=0):
    rng = np.random.default_rng(seed)
    phi = rng.standard_normal((P, d, n)) / np.sqrt(d * n)
    return phi, rng.standard_normal((40, d, n)) / np.sqrt(d * n), np.sign(rng.standard_normal(P))


@functools.lru_cache(maxsize=None)
def _markov(P):
    task = markov_task(P=P, n_test=40)
    spec = task.spec(width=P, temperature=0.01)
    return np.asarray(task.phi("train", spec)), np.asarray(task.phi("test", spec)), task.y_train


@functools.lru_cache(maxsize=None)
def _digits(P):
    src = digits_episodes()
    rng = np.random.default_rng(0)
    layers = [HeadLayer.qk(rng.normal(size=(4, 4, 16)), rng.normal(size=(4, 4, 16))) for _ in range(2)]
    task = src.task(layers, src.episode_sets(P=P, n_eval=40, seed=1))
    spec = task.spec(width=P, temperature=0.01, readout="mean")
    return np.asarray(task.phi("train", spec)), np.asarray(task.phi("test", spec)), task.y_train


CASES = {
    "random r<P P=300": lambda: _random(300, 20, 4),
    "random r>P P=50": lambda: _random(50, 30, 4),
    "random r<P P=2000": lambda: _random(2000, 30, 4, seed=1),
    "markov r>P P=300": lambda: _markov(300),
    "markov r<P P=2000": lambda: _markov(2000),
    "digits r<P P=300": lambda: _digits(300),
    "digits r>P P=50": lambda: _digits(50),
    "digits r<P P=2000": lambda: _digits(2000),
}


def _overlaps(n, seed=3):
    """A positive-definite U and a singular one (rank 1, the kernel of a single path direction)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    b = rng.standard_normal((n, 1))
    return {"pd": A @ A.T / n + 0.2 * np.eye(n), "singular": b @ b.T}


def _rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(a)), 1e-300))


@pytest.mark.parametrize("case", list(CASES))
def test_dense_and_path_space_agree(case):
    phi, phi_te, y = CASES[case]()
    P, d, n = phi.shape
    T = 0.01
    kd_d, y_d = train_kernel_data(phi, y, "dense")
    kd_p, y_p = train_kernel_data(phi, y, "path")
    assert kd_p.phi_a.shape == (d * n, d, n) and kd_p.offset is not None and kd_d.offset is None
    pk_d, yk_d = training_kernels(phi, phi_te, y, once=True, mode="dense")
    pk_p, yk_p = training_kernels(phi, phi_te, y, once=True, mode="path")
    lm_grad = jax.grad(lambda U, kd, yy: kernel_log_marginal(kd, U, yy, T))
    for label, U in _overlaps(n).items():
        U = jnp.asarray(U)
        got = {
            "energy": (kernel_energy(kd_d, U, y_d, T), kernel_energy(kd_p, U, y_p, T)),
            "log marginal": (kernel_log_marginal(kd_d, U, y_d, T), kernel_log_marginal(kd_p, U, y_p, T)),
            "gradient (4.5a)": (energy_gradient(U, kd_d, y_d, T), energy_gradient(U, kd_p, y_p, T)),
            "autodiff gradient": (lm_grad(U, kd_d, y_d), lm_grad(U, kd_p, y_p)),
        }
        for (a, b), key in zip(
            zip(energy_derivatives(U, kd_d, y_d, T), energy_derivatives(U, kd_p, y_p, T)), ("E", "dE", "Hessian")
        ):
            got[f"{key} (4.5b)"] = (a, b)
        m_d, v_d = predictive(U, pk_d, yk_d, T)
        m_p, v_p = predictive(U, pk_p, yk_p, T)
        got["test mean"], got["test variance"] = (m_d, m_p), (v_d, v_p)
        for what, (a, b) in got.items():
            assert np.all(np.isfinite(np.asarray(a))), (case, label, what)
            assert _rel(a, b) <= RTOL, (case, label, what, _rel(a, b))


def test_the_comparison_can_fail():
    """A planted error of 1e-5 in one label is seen: the tolerance of the agreement test is not vacuous."""
    phi, _, y = _random(300, 20, 4)
    U = jnp.asarray(_overlaps(4)["pd"])
    kd_d, y_d = train_kernel_data(phi, y, "dense")
    y_bad = y.copy()
    y_bad[7] += 1e-5
    kd_p, y_p = train_kernel_data(phi, y_bad, "path")
    assert _rel(kernel_energy(kd_d, U, y_d, 0.01), kernel_energy(kd_p, U, y_p, 0.01)) > RTOL


def test_factorisation_is_a_qr_of_the_augmented_features():
    """Streamed in blocks of 7 rows or at once, R^T R = F^T F, R^T c = F^T y and |c|^2 + |y_perp|^2 = |y|^2 (eq.
    (4.10a)); a rank-deficient F (a repeated feature column) needs nothing special."""
    phi, _, y = _random(101, 6, 3)
    phi[:, 5, :] = phi[:, 4, :]  # rank r - 3
    F = phi.reshape(101, -1)
    whole, blocks = path_space(phi, y), path_space(phi, y, block_rows=7)
    for ps in (whole, blocks):
        R = ps.phi.reshape(18, 18)
        np.testing.assert_allclose(R.T @ R, F.T @ F, rtol=0, atol=1e-12 * np.abs(F.T @ F).max())
        np.testing.assert_allclose(R.T @ ps.y, F.T @ y, rtol=0, atol=1e-12 * np.abs(F.T @ y).max())
        assert ps.offset[0] == 101 - 18
        assert ps.y @ ps.y + ps.offset[1] == pytest.approx(y @ y, rel=1e-13)
    gen = ((phi[i : i + 10], y[i : i + 10]) for i in range(0, 101, 10))  # a generator: nothing held at once
    ps = path_space_blocks(gen, 6, 3)
    np.testing.assert_allclose(np.abs(ps.phi), np.abs(whole.phi), atol=1e-12)  # QR is unique up to row signs


def test_policy_and_bad_input():
    assert use_path_space(1000, 231, 4) and not use_path_space(924, 231, 4) and not use_path_space(100, 231, 4)
    assert use_path_space(100, 231, 4, "path") and not use_path_space(10**6, 231, 4, "dense")
    with pytest.raises(InputError, match="path_space"):
        use_path_space(10, 2, 2, "sparse")
    with pytest.raises(InputError, match="path_space"):
        path_space_blocks(iter([(np.zeros((3, 2, 2)), np.zeros(4))]), 2, 2)
    with pytest.raises(InputError, match="no training inputs"):
        path_space_blocks(iter([]), 2, 2)


def test_solver_and_reference_solver_agree_across_routes():
    """The saddle point (Newton, docs/theory.md §4.7) and the independent reference iteration on the P x P route
    and in path space: the same U* to 1e-9 and the same action to 1e-9 (the offset restores the full energy)."""
    from bayes_attn.network import NetworkSpec
    from bayes_attn.theory import reference_solve, solve

    phi, _, y = _random(400, 6, 4, seed=2)
    spec = NetworkSpec(heads=(2, 2), n0=6, width=200, temperature=0.05)
    dense, path = solve(spec, phi, y, path_space="dense"), solve(spec, phi, y, path_space="path")
    assert dense.status.ok and path.status.ok
    for a, b in zip(dense.Us, path.Us):
        assert _rel(a, b) <= RTOL
    assert path.status.action == pytest.approx(dense.status.action, rel=RTOL)
    ref = reference_solve(spec, phi, y, path_space="path")
    assert _rel(ref.Us[0], dense.U) <= 1e-8


@pytest.mark.parametrize("kind", ["order_parameters", "collapsed"])
def test_sampled_models_see_the_same_density(kind):
    """The order-parameter and collapsed models built on either route: the same log-density, gradient and stored
    predictions at random sites (what every sampler evaluates)."""
    from tests.conftest import random_task
    from bayes_attn.inference.models import build_model

    task = random_task(P=80, Q=7, S=3, n0=4, heads=(2, 2), seed=4)  # r = 16 < P
    spec = task.spec(width=6, temperature=0.1)
    (model, a_d), (_, a_p) = (build_model(task, spec, kind, path_space=m) for m in ("dense", "path"))
    assert a_p.kernels.train.phi_a.shape[0] == 16 and a_d.kernels.train.phi_a.shape[0] == 80
    rng = np.random.default_rng(0)
    z = {k: jnp.asarray(0.5 * rng.standard_normal(s)) for k, s in model.site_shapes().items()}
    for f in (model.log_density, jax.grad(model.log_density)):
        for a, b in zip(jax.tree.leaves(f(z, a_d)), jax.tree.leaves(f(z, a_p))):
            assert _rel(a, b) <= RTOL
    d_d, d_p = model.derived(z, a_d), model.derived(z, a_p)
    for key in ("f", "f_var", "U"):
        assert _rel(d_d[key], d_p[key]) <= RTOL, key


def test_a_scan_gives_the_same_dataset_on_both_routes():
    """theory.scan (the ``bayes-attn theory`` command's work, ``[theory] path_space``): the same order parameters,
    predictions and GP baselines to 1e-9 on either route."""
    from tests.conftest import random_task
    from bayes_attn.theory import scan

    task = random_task(P=60, Q=9, S=3, n0=3, heads=(2,), seed=6)  # r = 6 < P
    spec = task.spec(width=10, temperature=0.1)
    d, p = (scan(task, spec, [10, 30], [0.1], path_space=m) for m in ("dense", "path"))
    for key in ("U", "predictor_mean", "predictor_var", "gp_mean", "gp_var", "action"):
        assert _rel(d[key].values, p[key].values) <= RTOL, key


def test_the_model_table_chooses_the_route(tmp_path):
    """``[model] path_space`` reaches the sampled model; a bad value is one line naming the field."""
    from bayes_attn.config import sampler_config

    raw = {"model": {"kind": "order_parameters", "path_space": "dense"}, "sampler": {}}
    assert sampler_config(raw).path_space == "dense"
    with pytest.raises(InputError, match="model.path_space"):
        sampler_config({"model": {"kind": "order_parameters", "path_space": "sparse"}})
