"""Reweighting against a brute-force O(M^2 L) count; the validation split leaks no near-duplicate."""

import numpy as np
import pytest

from bayes_attn import InputError
from bayes_attn.families import max_identity, neighbour_counts, sequence_weights, split_validation


def _family(M=150, L=23, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 21, (6, L))
    s = base[rng.integers(0, 6, M)]
    mut = rng.random((M, L)) < rng.uniform(0.0, 0.4, (M, 1))
    return np.where(mut, rng.integers(0, 21, (M, L)), s)


@pytest.mark.parametrize("theta", [0.8, 0.6, 1.0, 0.3])
def test_weights_equal_brute_force(theta):
    s = _family()
    M, L = s.shape
    ident = np.array([[np.sum(s[a] == s[b]) / L for b in range(M)] for a in range(M)])
    counts = (ident >= theta - 1e-12).sum(1)
    np.testing.assert_array_equal(neighbour_counts(s, theta, block=32), counts)  # 5 blocks, one partial
    w = sequence_weights(s, theta)
    np.testing.assert_allclose(w, 1.0 / counts)
    assert 1 <= w.sum() <= M


def test_max_identity_and_split_leak_nothing():
    s = _family(M=200, seed=1)
    L = s.shape[1]
    ident = np.array([[np.sum(a == b) / L for b in s] for a in s])
    np.testing.assert_allclose(max_identity(s[:50], s[50:], block=16), ident[:50, 50:].max(1))
    tr, va = split_validation(s, 0.8, fraction=0.2, seed=3)
    assert len(np.intersect1d(tr, va)) == 0 and len(va) == 40
    assert ident[np.ix_(tr, va)].max() < 0.8  # no training row within 80 % of a validation row
    dropped = np.setdiff1d(np.arange(200), np.union1d(tr, va))
    assert len(dropped) > 0 and (ident[np.ix_(dropped, va)].max(1) >= 0.8).all()


@pytest.mark.parametrize("theta", [0.0, -0.1, 1.5, float("nan")])
def test_theta_outside_unit_interval(theta):
    with pytest.raises(InputError, match="theta"):
        sequence_weights(np.zeros((3, 4), int), theta)


@pytest.mark.parametrize("L", [254, 255, 256, 300, 510, 600])
def test_counts_over_many_columns_are_the_definition(L):
    """Past 255 columns the identical-column count is summed over chunks that each fit in a byte (the padding
    of the last chunk never counts as identical)."""
    rng = np.random.default_rng(L)
    s = rng.integers(0, 3, (50, L))
    s[25:] = s[:25]
    s[25:, : L // 10] = rng.integers(0, 3, (25, L // 10))  # near-duplicates around the threshold
    same = (s[:, None, :] == s[None, :, :]).sum(-1)
    thr = int(np.ceil(0.8 * L - 1e-9))
    np.testing.assert_array_equal(neighbour_counts(s, 0.8), (same >= thr).sum(1))
    np.testing.assert_allclose(max_identity(s[:10], s[10:]), same[:10, 10:].max(1) / L)
