"""Monte Carlo samplers vs exact enumeration, Hamming distance, PT bookkeeping (potts.md §2, §10.4-5)."""

import jax
import numpy as np
import pytest

import bayes_attn  # noqa: F401
from bayes_attn import InputError
from bayes_attn.potts import (
    Potts,
    exact_distribution,
    generate_couplings,
    geometric_ladder,
    hamming_distance,
    parallel_tempering,
    sample_chains,
    state_index,
)


def _kl(p, samples, C):
    q = np.bincount(state_index(samples, C), minlength=p.size) / len(samples)
    return float(np.sum(p * np.log(p / np.maximum(q, 1e-12))))


@pytest.fixture(scope="module")
def tiny():
    J, U = generate_couplings("G1", 3, 3, seed=11)
    h = 0.5 * np.random.default_rng(12).normal(size=(3, 3))
    m = Potts(2.0 * J, U, 1.0, h)
    return m, exact_distribution(m)[1]


# Expected KL of an empirical histogram of N effectively independent draws on 27 states is
# about 26 / (2 N) ~ 1e-4 here; 2e-3 leaves room for autocorrelation but fails for a wrong sampler
@pytest.mark.parametrize("method", ["heat_bath", "metropolis"])
def test_chains_match_exact_enumeration(tiny, method):
    m, p = tiny
    r = sample_chains(
        jax.random.PRNGKey(0), m.J, m.U, m.h, m.beta, 1000, n_blocks=40, thin=2, burn_blocks=5, method=method
    )
    assert _kl(p, r.samples, 3) < 2e-3


def test_parallel_tempering_matches_exact_enumeration(tiny):
    m, p = tiny
    r = parallel_tempering(
        jax.random.PRNGKey(1), m.J, m.U, m.h, [0.3, 0.6, 1.0], 1000, n_blocks=40, thin=2, burn_blocks=5
    )
    assert _kl(p, r.samples, 3) < 2e-3
    assert r.swap_acc.shape == (2,) and np.all((r.swap_acc > 0) & (r.swap_acc <= 1))
    assert r.round_trips.mean() > 0
    # every rung is a valid Gibbs distribution too: rung 0 at beta = 0.3
    p0 = exact_distribution(m.with_beta(0.3))[1]
    assert _kl(p0, r.snapshots[5:, 0].reshape(-1, 3), 3) < 2e-3


def test_wrong_beta_is_detected(tiny):
    """The KL check has power: samples at beta=1 vs the exact law at beta=2 differ."""
    m, p = tiny
    r = sample_chains(jax.random.PRNGKey(0), m.J, m.U, m.h, m.beta, 1000, n_blocks=40, thin=2, burn_blocks=5)
    assert _kl(exact_distribution(m.with_beta(2.0))[1], r.samples, 3) > 1e-2


def test_hamming_distance_bruteforce_and_infinite_temperature():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 4, (30, 6))
    ref = np.mean([np.mean(s[a] != s[b]) for a in range(30) for b in range(30) if a != b])
    assert np.isclose(hamming_distance(s, 4), ref)
    # D(beta -> 0) = 1 - 1/C within MC error (§10.5); s.e. of D over 400 x 20 draws ~ 2e-3
    J, U = generate_couplings("G2", 20, 20, seed=0)
    r = sample_chains(jax.random.PRNGKey(3), J, U, None, 1e-6, 400, n_blocks=2, thin=2)
    assert abs(hamming_distance(r.snapshots[-1, 0], 20) - 0.95) < 0.01


def test_bad_inputs():
    J, U = generate_couplings("G1", 3, 3)
    with pytest.raises(InputError, match="^betas: must be strictly increasing"):
        parallel_tempering(jax.random.PRNGKey(0), J, U, None, [1.0, 0.5], 4, n_blocks=2)
    with pytest.raises(InputError, match="^method:"):
        sample_chains(jax.random.PRNGKey(0), J, U, None, 1.0, 4, n_blocks=2, method="wolff")
    np.testing.assert_allclose(geometric_ladder(1, 4, 3), [1, 2, 4])
