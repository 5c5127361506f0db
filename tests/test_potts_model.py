"""Potts Hamiltonian, conditionals, enumeration, generators and the exact FA mapping (potts.md §1, §3.3, §4)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayes_attn  # noqa: F401  (float64)
from bayes_attn import InputError
from bayes_attn.potts import (
    FAConfig,
    Potts,
    all_states,
    conditional_logits,
    energy,
    exact_distribution,
    fa_attention,
    fa_init,
    fa_logits,
    generate_couplings,
    mlm_loss,
    nll_star,
    pl_loss,
    pseudo_nll,
)


def _model(L=4, C=3, seed=0, fields=True):
    J, U = generate_couplings("G1", L, C, seed)
    h = np.random.default_rng(seed + 1).normal(size=(L, C)) if fields else None
    return Potts(J, U, 1.3, h)


def test_energy_matches_pair_sum():
    m = _model()
    s = np.random.default_rng(2).integers(0, m.C, (7, m.L))
    ref = [
        -sum(m.J[i, j] * m.U[x[i], x[j]] for i in range(m.L) for j in range(i + 1, m.L))
        - sum(m.h[i, x[i]] for i in range(m.L))
        for x in s
    ]
    np.testing.assert_allclose(energy(s, m.J, m.U, m.h), ref, rtol=1e-12)


def test_conditionals_are_ratios_of_boltzmann_weights():
    """p(s_i = a | rest) from exp(-beta H) with s_i replaced by each colour (§1.1)."""
    m = _model()
    s = np.random.default_rng(3).integers(0, m.C, (5, m.L))
    lp = jax.nn.log_softmax(conditional_logits(m, s), -1)
    for i in range(m.L):
        alt = np.repeat(s[:, None], m.C, 1)
        alt[:, :, i] = np.arange(m.C)
        ref = jax.nn.log_softmax(-m.beta * energy(alt, m.J, m.U, m.h), -1)
        np.testing.assert_allclose(lp[:, i], ref, atol=1e-12)


def test_exact_distribution_normalised_and_boltzmann():
    m = _model(L=3, C=3)
    states, p = exact_distribution(m)
    assert states.shape == (27, 3) and np.isclose(p.sum(), 1.0)
    E = np.asarray(energy(states, m.J, m.U, m.h))
    np.testing.assert_allclose(np.log(p[0] / p[5]), -m.beta * (E[0] - E[5]), rtol=1e-12)
    assert [tuple(x) for x in all_states(2, 3)] == list(itertools.product(range(3), repeat=2))


@pytest.mark.parametrize("kind", ["G1", "G2", "G3", "G4"])
def test_generators(kind):
    J, U = generate_couplings(kind, 12, 5, seed=4)
    assert np.allclose(J, J.T) and np.allclose(np.diag(J), 0) and np.allclose(U, U.T)
    J2, _ = generate_couplings(kind, 12, 5, seed=4)
    np.testing.assert_array_equal(J, J2)
    if kind in ("G2", "G4"):
        assert (J >= 0).all()
    if kind == "G4":
        np.testing.assert_allclose(J.sum(1), 1.0, atol=1e-8)
    if kind == "G3":
        i, j = np.nonzero(np.triu(J))
        assert ((j - i) <= 2).sum() == 12 * 2 - 3 and ((j - i) > 2).sum() == 3


def test_bad_input_one_line():
    J, U = generate_couplings("G1", 4, 3)
    with pytest.raises(InputError, match="^J: must be symmetric$"):
        Potts(J + np.triu(np.ones((4, 4)), 1), U)
    with pytest.raises(InputError, match="^couplings.kind: unknown value"):
        generate_couplings("G9", 4, 3)


def test_exact_mapping_fa_free():
    """A = beta J (zero diagonal), V = U, b = beta h reproduces the true conditional logits (§10.1)."""
    m = _model(L=6, C=4)
    s = np.random.default_rng(5).integers(0, m.C, (20, m.L))
    params = {
        "A": jnp.asarray(m.beta * m.J + np.diag(np.arange(1.0, 7.0)))[None],
        "V": jnp.asarray(m.U)[None],
        "b": jnp.asarray(m.beta * m.h),
    }  # nonzero diagonal of A must be masked
    np.testing.assert_allclose(fa_logits(params, s), conditional_logits(m, s), atol=1e-12)
    assert np.isclose(float(pl_loss(params, s)), nll_star(m, s), atol=1e-12)


def test_exact_mapping_softmax_g4():
    """G4 couplings (unit row sums) are exactly one softmax head: scores log J_ij, V = beta U (§3.3)."""
    L, C, beta = 7, 3, 2.0
    J, U = generate_couplings("G4", L, C, seed=6)
    m = Potts(J, U, beta)
    params = {
        "P": jnp.eye(L),
        "WQ": jnp.sqrt(L) * jnp.eye(L)[None],
        "WK": jnp.asarray(np.log(J + np.eye(L)))[None],
        "V": jnp.asarray(beta * U)[None],
    }
    A = fa_attention(params)[0]
    np.testing.assert_allclose(A, J, atol=1e-10)
    s = np.random.default_rng(7).integers(0, C, (10, L))
    np.testing.assert_allclose(fa_logits(params, s), conditional_logits(m, s), atol=1e-10)


def test_mlm_mean_equals_pl():
    """Mean over the masked position of one-mask MLM losses == all-site PL loss (§4, §10.2)."""
    for kind in ("free", "softmax"):
        cfg = FAConfig(L=5, C=3, kind=kind, heads=2, d_pos=4, d_k=3, bias=True)
        p = fa_init(jax.random.PRNGKey(1), cfg, scale=0.7)
        s = np.random.default_rng(8).integers(0, 3, (9, 5))
        mlm = np.mean([float(mlm_loss(p, s, np.full(9, i))) for i in range(5)])
        assert np.isclose(mlm, float(pl_loss(p, s)), rtol=1e-13)
        # the output at i does not depend on s_i (automatic masking)
        s2 = s.copy()
        s2[:, 2] = (s2[:, 2] + 1) % 3
        np.testing.assert_allclose(fa_logits(p, s)[:, 2], fa_logits(p, s2)[:, 2], atol=1e-13)


def test_pseudo_nll_uniform():
    s = np.zeros((3, 4), int)
    assert np.isclose(float(pseudo_nll(jnp.zeros((3, 4, 5)), s)), np.log(5))


def test_fields_consensus_and_config_validation():
    from bayes_attn.potts import SampleConfig, generate_fields

    h, cons = generate_fields(30, 5, 3, field_sigma=0.1, consensus=2.0)
    np.testing.assert_array_equal(h.argmax(1), cons)  # 2.0 vs 0.1 N(0, 1): > 10 sigma apart
    h2, _ = generate_fields(30, 5, 3, field_sigma=0.1, consensus=2.0)
    np.testing.assert_array_equal(h, h2)
    assert generate_fields(3, 3, 0) == (None, None)
    with pytest.raises(InputError, match="^potts.consensus: must be a finite number >= 0"):
        SampleConfig(consensus=-1.0)
    with pytest.raises(InputError, match="^potts.foo: unknown key$"):
        SampleConfig.from_table({"foo": 1})
    with pytest.raises(InputError, match="^potts.target_D: must be < 1"):
        SampleConfig(target_D=1.5)
