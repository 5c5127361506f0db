"""Hidden-Markov task (theory.md §9.1): data law, hand-built heads."""

import jax.numpy as jnp
import numpy as np
import pytest

from bayes_attn import InputError
from bayes_attn.network import w_scores
from bayes_attn.tasks import MARKOV_PATH_SHORT, markov_head_W, markov_sequences, markov_task


def test_shapes_labels_bos_positions():
    x, y = markov_sequences(40, seed=1)
    assert x.shape == (40, 31, 231)
    np.testing.assert_array_equal(y, np.r_[np.ones(20), -np.ones(20)])
    np.testing.assert_array_equal(x[:, 0, :200], 0.0)  # BOS: zero features, no noise
    np.testing.assert_array_equal(x[:, :, 200:], np.broadcast_to(np.eye(31), (40, 31, 31)))


@pytest.mark.parametrize("noise", [(1.0, 1.0, 1.0), (0.5, 2.0, 3.0)])
def test_sequences_are_emission_plus_mapped_noise_to_the_last_bit(noise):
    """The data law written out with the generator's own draws, product included: the default (isotropic) noise
    skips the product z @ I, which must not change a bit."""
    n, seed = 30, 5
    x, y = markov_sequences(n, seed=seed, noise=noise)
    rng = np.random.default_rng(seed)
    v_plus = np.sqrt(2) * np.r_[np.ones(100), np.zeros(100)]
    v_minus = np.sqrt(2) * np.r_[np.zeros(100), np.ones(100)]
    u_par = (v_plus + v_minus) / np.linalg.norm(v_plus + v_minus)
    u_perp = (v_plus - v_minus) / np.linalg.norm(v_plus - v_minus)
    P_par, P_perp = np.outer(u_par, u_par), np.outer(u_perp, u_perp)
    noise_map = noise[0] * P_par + noise[1] * P_perp + noise[2] * (np.eye(200) - P_par - P_perp)
    states = np.empty((n, 30))
    states[:, 0] = rng.choice([1.0, -1.0], size=n)
    stay = np.where(y > 0, 0.7, 0.3)
    for t in range(1, 30):
        states[:, t] = np.where(rng.random(n) < stay, states[:, t - 1], -states[:, t - 1])
    expected = rng.standard_normal((n, 30, 200)) @ noise_map + np.where(states[..., None] > 0, v_plus, v_minus)
    np.testing.assert_array_equal(x[:, 1:, :200], expected)


def test_noise_strengths_per_direction():
    noise = (0.5, 2.0, 3.0)
    x, _ = markov_sequences(400, seed=2, noise=noise)
    xi = x[:, 1:, :200]
    v_plus = np.sqrt(2) * np.r_[np.ones(100), np.zeros(100)]
    v_minus = np.sqrt(2) * np.r_[np.zeros(100), np.ones(100)]
    u_perp = (v_plus - v_minus) / 20.0
    u_par = (v_plus + v_minus) / 20.0
    # the state is the sign of the perpendicular component (plus noise); remove the mean emission
    s = np.sign(xi @ u_perp)
    clean = np.where(s[..., None] > 0, v_plus, v_minus)
    eta = (xi - clean).reshape(-1, 200)
    good = np.abs(xi @ u_perp).ravel() > 4 * noise[1] / 2  # rows where the sign decoding is reliable
    assert np.std(eta @ u_par) == pytest.approx(noise[0], rel=0.05)
    assert np.std(eta[good] @ u_perp) == pytest.approx(noise[1], rel=0.15)
    # an out-of-plane direction
    e = np.zeros(200)
    e[0], e[1] = 1 / np.sqrt(2), -1 / np.sqrt(2)
    assert np.std(eta @ e) == pytest.approx(noise[2], rel=0.05)


def test_transition_probabilities_by_class():
    x, y = markov_sequences(400, seed=3, noise=(0.0, 0.0, 0.0))
    q = (np.sqrt(2) * np.r_[np.ones(100), -np.ones(100)]) / 200
    states = np.sign(x[:, 1:, :200] @ q)
    stay = (states[:, 1:] == states[:, :-1]).mean(axis=1)
    assert stay[y > 0].mean() == pytest.approx(0.7, abs=0.02)
    assert stay[y < 0].mean() == pytest.approx(0.3, abs=0.02)


def test_good_head_noise_free_scores():
    """Query t: previous same-state token 20, BOS 15, previous other-state token 0 (beta_att = 10)."""
    x, _ = markov_sequences(2, seed=4, noise=(0.0, 0.0, 0.0))
    W = 10.0 * markov_head_W("good")
    A = np.asarray(w_scores(jnp.asarray(x), jnp.asarray(W[None])))[:, 0]  # (b, s, t)
    q = (np.sqrt(2) * np.r_[np.ones(100), -np.ones(100)]) / 200
    st = np.sign(x[:, 1:, :200] @ q)
    for b in range(2):
        for t in range(2, 31):
            same = st[b, t - 1] == st[b, t - 2]
            assert A[b, t - 1, t] == pytest.approx(20.0 if same else 0.0)
            assert A[b, 0, t] == pytest.approx(15.0)


def test_uniform_head_and_blank_zero_are_uniform():
    task = markov_task(P=4, n_test=2, paths=2)
    om = task.omegas("train")
    np.testing.assert_allclose(om[0][:, 1], 1 / 31, rtol=1e-12)  # blank(0)
    np.testing.assert_allclose(om[1][:, 0], 1 / 31, rtol=1e-12)  # uniform
    assert task.heads == (2, 1)
    assert task.meta["noise"] == [1.0, 1.0, 5.0]


def test_four_path_labels_and_seeds():
    t1 = markov_task(P=4, n_test=2)
    assert [MARKOV_PATH_SHORT[p] for p in t1.path_labels] == ["g", "a1", "d", "a2"]
    t2 = markov_task(P=4, n_test=2)
    np.testing.assert_array_equal(t1.x_train, t2.x_train)
    t3 = markov_task(P=4, n_test=2, head_seeds=(1, 2))
    assert not np.allclose(t3.layers[0].params["W"], t1.layers[0].params["W"])
    np.testing.assert_array_equal(t3.x_train, t1.x_train)


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"P": 5}, "data.P"),
        ({"paths": 3}, "data.paths"),
        ({"noise": (1, 1)}, "data.noise"),
        ({"seed_train": -1}, "data.seed_train"),
    ],
)
def test_bad_arguments(kw, field):
    with pytest.raises(InputError, match=field):
        markov_task(n_test=2, **kw)


def test_two_random_heads_of_a_layer_differ():
    """Every random head of a layer has its own draw; the first keeps the layer's seed (so the default
    configurations are unchanged)."""
    from bayes_attn.tasks import markov_head_W, markov_layers

    layers = markov_layers(heads=[["rand", "rand", "good"], ["unif", "rand"]], head_seeds=(147, 247))
    W = np.asarray(layers[0].params["W"]) / 10.0  # beta_att = 10
    assert layers[0].names == ("rand", "rand_2", "good")
    np.testing.assert_allclose(W[0], markov_head_W("blank", 1.0, seed=147), rtol=1e-12)
    assert np.abs(W[0] - W[1]).max() > 1.0
    default = markov_layers()
    np.testing.assert_allclose(
        np.asarray(default[0].params["W"])[1] / 10.0, markov_head_W("blank", 1.0, seed=147), rtol=1e-12
    )
