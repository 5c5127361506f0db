"""APC contact scores against plain loops; true contacts and precision on a hand-made structure."""

import numpy as np
import pytest

from bayes_attn import InputError
from bayes_attn.families import (
    apc,
    contact_map,
    contact_scores,
    frobenius_scores,
    precision_at,
    ranked_pairs,
    read_chain,
)
from protein_fixtures import CONTACTS, FOCUS, MISMATCH, MISSING, write_pdb


def test_frobenius_and_apc_equal_plain_loops():
    rng = np.random.default_rng(0)
    L, C = 7, 5
    K = rng.standard_normal((L, L, C, C))
    F = np.zeros((L, L))
    for i in range(L):
        for j in range(L):
            if i == j:
                continue
            S = 0.5 * (K[i, j] + K[j, i].T)[1:, 1:]  # symmetrise, drop the gap state 0
            S = S - S.mean(0) - S.mean(1)[:, None] + S.mean()
            F[i, j] = np.sqrt(np.sum(S**2))
    np.testing.assert_allclose(frobenius_scores(K, gap=0), F, atol=1e-12)
    A = np.zeros((L, L))
    mean = sum(F[i, j] for i in range(L) for j in range(L) if i != j) / (L * (L - 1))
    for i in range(L):
        for j in range(L):
            if i != j:
                fi = sum(F[i, k] for k in range(L) if k != i) / (L - 1)
                fj = sum(F[k, j] for k in range(L) if k != j) / (L - 1)
                A[i, j] = F[i, j] - fi * fj / mean
    np.testing.assert_allclose(apc(F), A, atol=1e-12)
    np.testing.assert_allclose(contact_scores(K), A, atol=1e-12)
    r = ranked_pairs(A)
    assert r["rank"][0] == 1 and np.all(np.diff(r["score"]) <= 0) and r["i"].size == L * (L - 1) // 2


def test_structure_contacts_by_hand(tmp_path):
    pytest.importorskip("Bio.PDB")
    pdb = write_pdb(tmp_path / "toy.pdb")
    ch = read_chain(pdb, "A")
    assert len(ch.sequence) == 19 and ch.sequence[10] == "M"  # MSE read as M, water/SO4 skipped
    assert "6A" in ch.labels and any(m.endswith("MSE") for m in ch.modified)
    C, known, D, rep = contact_map(pdb, "A", FOCUS)
    truth = np.zeros((20, 20), bool)
    for i, j in CONTACTS:
        truth[i - 1, j - 1] = truth[j - 1, i - 1] = True
    np.testing.assert_array_equal(C, truth)  # altloc A chosen (occupancy 0.6)
    assert not known[MISSING - 1] and known.sum() == 19 and rep["unresolved"] == 1
    assert rep["mismatches"] == [f"Q{MISMATCH[0]}{MISMATCH[1]}"]
    np.testing.assert_allclose(D[5, 18], 7.0)  # glycine 6 measured at C-alpha
    # precision with hand-made scores: rank the five contacts 1st, 3rd, 5th, 7th, 9th among |i-j| >= 6
    S = np.zeros((20, 20))
    far = [
        (i, j) for i in range(20) for j in range(i + 6, 20) if (i + 1, j + 1) not in CONTACTS and known[i] and known[j]
    ]
    order = []
    for n, c in enumerate(sorted(CONTACTS)):
        order += [(c[0] - 1, c[1] - 1), far[n]]
    for rank, (i, j) in enumerate(order):
        S[i, j] = S[j, i] = 100.0 - rank
    S[MISSING - 1, 0] = S[0, MISSING - 1] = 1000.0  # unresolved: not evaluated
    out = precision_at(S, C, known, ks={"2": 2, "4": 4, "10": 10})
    assert [out["cuts"][k]["true"] for k in ("2", "4", "10")] == [1, 2, 5]
    assert out["cuts"]["10"]["precision"] == 0.5 and out["true_pairs"] == 5


def test_structure_bad_input(tmp_path):
    pytest.importorskip("Bio.PDB")
    pdb = write_pdb(tmp_path / "toy.pdb")
    with pytest.raises(InputError, match="chain: 'Z' is not in toy.pdb"):
        contact_map(pdb, "Z", FOCUS)
    with pytest.raises(InputError, match="does not align to the focus sequence"):
        contact_map(pdb, "A", "WWWWWWWWWWPPPPPPPPPPGGGGG")
    with pytest.raises(InputError, match="structure: file not found"):
        contact_map(tmp_path / "none.pdb", "A", FOCUS)
