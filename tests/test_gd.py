"""GD attention network: head removal, export to fixed attention, training, pruning (theory.md §4.8, §9.2)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_attn import InputError, gd
from bayes_attn.network import effective_weights, forward, forward_paths, gram, order_parameters
from bayes_attn.tasks import Task


@pytest.fixture(scope="module")
def small():
    cfg = gd.GDConfig(width=6, heads=(3, 2), d_qk=4, readout="mean", seed=1)
    params = gd.init_params(jax.random.PRNGKey(2), cfg, n0=5)
    x = jax.random.normal(jax.random.PRNGKey(3), (7, 4, 5))
    return cfg, params, x


def test_standard_weights_have_unit_scale():
    cfg = gd.GDConfig(width=200, heads=(2,), d_qk=2)
    V0, values, a = gd.standard_weights(gd.init_params(jax.random.PRNGKey(0), cfg, n0=200))
    for w in (V0, values[0], a):  # U(-1, 1) entries: variance 1/3, Var(w^2) = 1/5 - 1/9
        assert abs(float(jnp.var(w)) - 1 / 3) < 5 * np.sqrt((1 / 5 - 1 / 9) / w.size)


def test_head_removal_equals_smaller_network(small):
    cfg, params, x = small
    V0, values, a = gd.standard_weights(params)
    om = gd.attention(params, x)
    full = gd.apply(params, x, "mean")
    np.testing.assert_allclose(gd.apply(params, x, "mean", gd.head_masks(cfg.heads)), full, rtol=1e-12)
    # dropping head 1 of layer 0 == the network built without it (1/sqrt(H-1) from the smaller H)
    keep = jnp.array([0, 2])
    ref = forward(x, [om[0][:, keep], om[1]], "mean", V0, [values[0][keep], values[1]], a)
    got = gd.apply(params, x, "mean", gd.head_masks(cfg.heads, [(0, 1)]))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)
    # a layer without heads gives the zero predictor; accuracy is then undefined
    zero = gd.apply(params, x, "mean", gd.head_masks(cfg.heads, [(1, 0), (1, 1)]))
    np.testing.assert_array_equal(zero, 0.0)
    assert np.isnan(gd.accuracy(params, x, jnp.ones(7), "mean", dropped=[(1, 0), (1, 1)]))
    with pytest.raises(InputError, match="gd.dropped"):
        gd.head_masks(cfg.heads, [(2, 0)])


def test_exported_attention_reproduces_network(small):
    """Path form with the exported fixed Q/K (a Task) == layer-by-layer GD network (theory.md §2.4)."""
    cfg, params, x = small
    layers = gd.export_layers(params)
    task = Task(np.asarray(x), np.ones(7), np.asarray(x[:3]), np.ones(3), layers)
    V0, values, a = gd.standard_weights(params)
    f_paths = forward_paths(task.path_inputs("train", "mean"), V0, effective_weights(values, a))
    np.testing.assert_allclose(f_paths, gd.apply(params, x, "mean"), rtol=1e-10, atol=1e-13)
    assert task.path_labels[1] == "0-0,1-1"
    # U_GD is the unnormalised effective-weight overlap: U_GD / N_1 == U_1 of theory.md §4.3
    np.testing.assert_allclose(gd.u_gd(params) / cfg.width, order_parameters(values, a)[1][0], rtol=1e-12)
    np.testing.assert_allclose(gd.u_gd(params) / cfg.width, gram(effective_weights(values, a)), rtol=1e-12)


def test_training_learns_and_keeps_best(tmp_path):
    rng = np.random.default_rng(0)
    v = rng.normal(size=6)

    def make(n, seed):
        xx = np.random.default_rng(seed).normal(size=(n, 3, 6))
        return xx, np.sign(xx.mean(axis=1) @ v)

    val = make(200, 1)
    cfg = gd.GDConfig(width=8, heads=(2, 2), d_qk=3, lr=1e-2, batch=64, steps=300, eval_every=25, patience=3)
    acc0 = gd.accuracy(gd.init_params(jax.random.PRNGKey(cfg.seed), cfg, 6), *val)
    res = gd.train(cfg, lambda s: make(64, 100 + s), val, n0=6)
    accs = [h[2] for h in res.history]
    assert res.best_val_accuracy == max(accs) and acc0 < 0.8
    assert res.best_val_accuracy > 0.9  # a linear rule of the pooled tokens is learnable
    assert gd.accuracy(res.params, *val, "mean") == res.best_val_accuracy
    gd.save_gd(tmp_path / "gd.npz", res, {"val": val, "seeds": {"val": 1}})
    p2 = gd.load_gd_params(tmp_path / "gd.npz")
    np.testing.assert_allclose(gd.apply(p2, val[0]), gd.apply(res.params, val[0]), rtol=1e-12)


def _accuracy_without(params, x, y, dropped, heads):
    """Accuracy of the smaller network built without the ``dropped`` heads, by the layer-by-layer forward
    map of docs/theory.md §2.1 (independent of ``gd.accuracy`` and its head masks)."""
    V0, values, a = gd.standard_weights(params)
    om = gd.attention(params, x)
    keep = [jnp.array([h for h in range(H) if (l, h) not in dropped]) for l, H in enumerate(heads)]
    f = forward(x, [o[:, k] for o, k in zip(om, keep)], "mean", V0, [v[k] for v, k in zip(values, keep)], a)
    return float(np.mean(np.sign(np.asarray(f)) == np.asarray(y)))


def test_pruning_curves_and_rank_correlation(small):
    cfg, params, x = small
    y = jnp.sign(gd.apply(params, x, "mean"))  # the full model is right on every example
    base, drops = gd.single_head_drops(params, x, y)
    assert base == 1.0 and set(drops) == {(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)}
    for k, d in drops.items():
        assert d == pytest.approx(base - _accuracy_without(params, x, y, [k], cfg.heads))
    scores = np.array([0.3, 0.1, 0.2, 0.9, 0.5])
    orders = gd.pruning_orders(params, scores, n_random=4, seed=0)
    assert orders["ascending"] == [(0, 1), (0, 2), (0, 0), (1, 1), (1, 0)]
    assert orders["descending"] == orders["ascending"][::-1] and len(orders["random"]) == 4
    curve = gd.pruning_curve(params, x, y, orders["ascending"])
    assert curve[0] == base and len(curve) == 6
    assert np.isnan(curve[3]) and np.isnan(curve[5])  # layer 0 emptied after three removals
    assert curve[1] == pytest.approx(_accuracy_without(params, x, y, [(0, 1)], cfg.heads))
    assert curve[2] == pytest.approx(_accuracy_without(params, x, y, [(0, 1), (0, 2)], cfg.heads))
    rho, _ = gd.rank_correlation(params, scores, {k: s**2 for k, s in zip(orders["ascending"], sorted(scores))})
    assert rho == pytest.approx(1.0)
    with pytest.raises(InputError, match="gd.scores"):
        gd.pruning_orders(params, [1.0, 2.0])


def test_holdout_split_is_stratified_disjoint_and_complete():
    y = np.array([1.0] * 30 + [-1.0] * 10)
    fit, val = gd.holdout_split(y, 0.2, seed=3)
    assert len(np.intersect1d(fit, val)) == 0 and sorted(np.concatenate([fit, val])) == list(range(40))
    assert (np.sum(y[val] == 1), np.sum(y[val] == -1)) == (6, 2)  # round(0.2 * n_c) of each class
    for bad in (0.0, 1.0):
        with pytest.raises(InputError, match="gd.val_fraction"):
            gd.holdout_split(y, bad, seed=0)


def test_epoch_batches_visit_every_sequence_once_per_epoch():
    x, y = np.arange(10.0)[:, None, None], np.arange(10.0)
    batches = gd.epoch_batches(x, y, batch=3, seed=0)  # 3 batches per epoch, one sequence left out each epoch
    epochs = [np.concatenate([batches(s)[1] for s in range(1 + 3 * e, 4 + 3 * e)]) for e in range(4)]
    for seen in epochs:
        assert len(seen) == 9 and len(set(seen)) == 9
    assert len(set(np.concatenate(epochs))) == 10 and not all(np.array_equal(epochs[0], e) for e in epochs[1:])
    np.testing.assert_array_equal(batches(2)[0][:, 0, 0], batches(2)[1])  # x and y stay paired
    full = gd.epoch_batches(x, y, batch=64, seed=0)
    assert sorted(full(1)[1]) == list(range(10)) and sorted(full(7)[1]) == list(range(10))


def test_train_on_set_learns_a_fixed_set_without_seeing_its_validation_part():
    rng = np.random.default_rng(0)
    v = rng.normal(size=6)
    x = rng.normal(size=(240, 3, 6))
    y = np.sign(x.mean(axis=1) @ v)
    cfg = gd.GDConfig(width=8, heads=(2,), d_qk=3, lr=1e-2, batch=48, steps=200, eval_every=25, patience=4)
    res = gd.train_on_set(cfg, x, y, val_fraction=0.25)
    _, val = gd.holdout_split(y, 0.25, cfg.seed)
    assert res.best_val_accuracy == gd.accuracy(res.params, x[val], y[val]) > 0.85
    with pytest.raises(InputError, match="gd.y"):
        gd.train_on_set(cfg, x, y[:-1])
