"""Equilibration diagnostics and beta tuning against exact enumeration (potts.md §2.2-2.3)."""

import jax
import numpy as np
import pytest
from scipy.optimize import brentq

import bayes_attn  # noqa: F401
from bayes_attn.potts import Potts, diagnose, exact_distribution, generate_couplings, parallel_tempering, tune_beta


def exact_D(m: Potts) -> float:
    """D for independent pairs: 1 - (1/L) sum_i sum_a p_i(a)^2 (site marginals by enumeration)."""
    st, p = exact_distribution(m)
    marg = np.stack([np.bincount(st[:, i], weights=p, minlength=m.C) for i in range(m.L)])
    return float(1 - (marg**2).sum() / m.L)


def _tiny():
    J, U = generate_couplings("G2", 3, 3, seed=5)
    return Potts(J, U + np.eye(3), 1.0)


def test_diagnose_passes_and_D_matches_enumeration():
    m = _tiny()
    r = parallel_tempering(jax.random.PRNGKey(0), m.J, m.U, None, [0.5, 1.0], 400, n_blocks=24, thin=4, burn_blocks=4)
    rep = diagnose(r, 3, 4)
    assert rep.passed, rep.failures
    # D over 400 systems per snapshot, 20 snapshots: s.e. ~ 0.005
    assert abs(rep.D - exact_D(m)) < 0.02
    assert rep.swap_acc.size == 1 and rep.round_trips > 0


def test_diagnose_flags_a_nonstationary_run():
    m = _tiny()
    s0 = np.zeros((400, 3), np.int32)  # all chains start in one state, no burn-in
    r = parallel_tempering(jax.random.PRNGKey(1), m.J, m.U, None, [30.0], 400, n_blocks=6, thin=1, s0=s0)
    r_eq = parallel_tempering(jax.random.PRNGKey(2), m.J, m.U, None, [30.0], 400, n_blocks=6, thin=1)
    rep = diagnose(r, 3, 0, other=r_eq)
    assert not rep.passed


@pytest.mark.slow
def test_tune_beta_finds_exact_root():
    m = _tiny()
    target = exact_D(m.with_beta(1.5))
    beta_true = brentq(lambda b: exact_D(m.with_beta(b)) - target, 0.5, 4.0)
    tr = tune_beta(
        jax.random.PRNGKey(3),
        m.J,
        m.U,
        target=target,
        tol=0.005,
        beta_min=0.3,
        beta_max=6.0,
        rungs=8,
        systems=400,
        sweeps=200,
        thin=2,
    )
    assert tr.monotone and abs(tr.D - target) <= 0.005
    assert abs(np.log(tr.beta / beta_true)) < 0.1
