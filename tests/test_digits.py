"""Digits episodes (theory.md §9.2, project adaptation) and the user image-array loader."""

import numpy as np
import pytest

from bayes_attn import InputError
from bayes_attn.network import HeadLayer
from bayes_attn.tasks import digits_episodes, image_episodes, load_image_arrays, with_test_set
from bayes_attn.tasks._digits import layer_norm, patchify, sinusoidal_positions


@pytest.fixture(scope="module")
def src():
    return digits_episodes()


def test_geometry_and_class_split(src):
    assert src.images.shape == (1797, 8, 8, 1)
    assert src.images.min() == 0.0 and src.images.max() == 1.0  # pixels / 16
    assert (src.n0, src.n_tokens, src.n_patches) == (16, 12, 4)
    assert src.base_classes == tuple(range(7)) and src.novel_classes == (7, 8, 9)
    base = np.isin(src.labels, src.base_classes)
    for c in src.base_classes:  # stratified 60/20/20 within every class
        n = np.sum(src.labels == c)
        for s, frac in (("train", 0.6), ("val", 0.2), ("test", 0.2)):
            assert abs(np.sum((src.labels == c) & (src.split == s)) - frac * n) <= 1
    assert base.sum() == sum(np.sum(src.labels == c) for c in range(7))


def test_layer_norm_and_positions():
    z = np.random.default_rng(0).normal(size=(5, 16)) * 3 + 2
    ln = layer_norm(z)
    np.testing.assert_allclose(ln.mean(-1), 0, atol=1e-12)
    np.testing.assert_allclose(ln.var(-1), z.var(-1) / (z.var(-1) + 1e-5), rtol=1e-12)
    assert np.all(layer_norm(np.ones((2, 16))) == 0)  # constant patch -> zero token
    pe = sinusoidal_positions(12, 16)
    assert abs(pe.mean()) < 1e-12 and abs(pe.std() - 1) < 1e-5
    t, k = 5, 3
    raw = np.array([[np.sin(t / 10000 ** (2 * k / 16)), np.cos(t / 10000 ** (2 * k / 16))]])
    raw0 = np.array([[np.sin(0.0), np.cos(0.0)]])  # t = 0, k = 0
    # standardisation is one affine map for all entries: differences scale by the same factor
    ratio = (pe[t, 2 * k : 2 * k + 2] - pe[0, 0:2]) / (raw - raw0)[0]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-10)


def test_patchify_row_major():
    im = np.arange(64, dtype=float).reshape(1, 8, 8)
    p = patchify(im, 4)
    assert p.shape == (1, 4, 16)
    np.testing.assert_array_equal(p[0, 1], im[0, :4, 4:].ravel())  # top-right patch is j = 1
    np.testing.assert_array_equal(p[0, 2], im[0, 4:, :4].ravel())
    with pytest.raises(InputError, match="data.patch"):
        patchify(im, 3)


def test_episode_rules(src):
    idx, y = src.episode_indices("train", 200, seed=3)
    assert np.all(y[:100] == 1) and np.all(y[100:] == -1)
    lab = src.labels[idx]
    assert np.all(lab[:, 0] != lab[:, 1])  # two different classes
    c = (y + 1) // 2
    assert np.all(lab[np.arange(200), c.astype(int)] == lab[:, 2])  # query class sits in slot c
    assert np.all(idx[np.arange(200), c.astype(int)] != idx[:, 2])  # query image differs from its support
    assert np.all(src.split[idx] == "train") and np.all(np.isin(lab, src.base_classes))
    nidx, _ = src.episode_indices("novel", 50, seed=4)
    assert np.all(np.isin(src.labels[nidx], (7, 8, 9)))
    assert set(np.unique(lab[:, 0])) == set(range(7))  # every base class appears in slot 0
    # both slot orders occur
    assert np.any(lab[:, 0] < lab[:, 1]) and np.any(lab[:, 0] > lab[:, 1])


def test_tokens_formula(src):
    x, y = src.episodes("val", 4, seed=1)
    idx, y2 = src.episode_indices("val", 4, seed=1)
    np.testing.assert_array_equal(y, y2)
    pe, E = src.positions, src.embeddings
    for m in range(3):
        for j in range(4):
            r, cc = divmod(j, 2)
            patch = src.images[idx[1, m], 4 * r : 4 * r + 4, 4 * cc : 4 * cc + 4, 0].ravel()
            t = 4 * m + j
            np.testing.assert_allclose(x[1, t], layer_norm(patch) + pe[t] + E[m], atol=1e-12)


def test_ood_sets(src):
    xt, yt = src.episodes("test", 6, seed=2, perturb="transpose")
    idx, _ = src.episode_indices("test", 6, seed=2)
    ref = src.tokens(np.swapaxes(src.images[idx], 2, 3))
    np.testing.assert_allclose(xt, ref)
    xn, _ = src.episodes("test", 6, seed=2, perturb="noise")
    x0, _ = src.episodes("test", 6, seed=2)
    assert not np.allclose(xn, x0)
    sets = src.episode_sets(P=20, n_eval=10, seed=0)
    assert set(sets) == {"train", "val", "test", "novel", "ood_noise", "ood_transpose", "seeds"}
    assert sets["train"][0].shape == (20, 12, 16)


def test_task_with_qk_layers(src):
    rng = np.random.default_rng(0)
    layers = [HeadLayer.qk(rng.normal(size=(2, 4, 16)), rng.normal(size=(2, 4, 16))) for _ in range(2)]
    sets = src.episode_sets(P=10, n_eval=8, seed=5)
    task = src.task(layers, sets)
    assert task.heads == (2, 2) and task.n_train == 10 and task.n_test == 8
    assert task.path_inputs("test", "mean").shape == (8, 16, 4)
    t2 = with_test_set(task, *sets["novel"])
    np.testing.assert_array_equal(t2.x_test, sets["novel"][0])
    with pytest.raises(InputError, match="data.test"):
        src.task(layers, sets, test="nope")


def test_user_arrays_loader(tmp_path):
    rng = np.random.default_rng(1)
    imgs = rng.integers(0, 256, size=(40, 6, 6), dtype=np.uint8)
    labels = np.repeat(np.arange(4), 10)
    split = np.array((["train"] * 6 + ["val"] * 2 + ["test"] * 2) * 4)
    path = tmp_path / "mine.npz"
    np.savez(path, images=imgs, labels=labels, split=split)
    src = load_image_arrays(path, patch=4, size=8, channels=3, novel_classes=(3,))
    assert src.images.shape == (40, 8, 8, 3) and src.n0 == 48 and src.n_tokens == 12
    assert 0 <= src.images.min() and src.images.max() <= 1
    assert src.base_classes == (0, 1, 2) and src.name == "mine"
    np.testing.assert_array_equal(src.images[..., 0], src.images[..., 2])  # greyscale repeated
    x, y = src.episodes("train", 4, seed=0)
    assert x.shape == (4, 12, 48)
    # no split given: stratified default; float images above 1 are divided by the maximum
    src2 = image_episodes(imgs.astype(float) * 2, labels, patch=3)
    assert src2.images.max() == 1.0 and set(src2.split) == {"train", "val", "test"}
    np.savez(tmp_path / "bad.npz", images=imgs)
    with pytest.raises(InputError, match="data.labels"):
        load_image_arrays(tmp_path / "bad.npz")
    with pytest.raises(InputError, match="data.split"):
        image_episodes(imgs, labels, np.array(["x"] * 40))
    with pytest.raises(InputError, match="data.size"):
        image_episodes(imgs, labels, patch=4, size=10)
    with pytest.raises(InputError, match="data.file"):
        load_image_arrays(tmp_path / "missing.npz")
