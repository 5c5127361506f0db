"""In-context one-shot image classification episodes (docs/theory.md §9.2, project adaptation).

An episode is ``[support 0, support 1, query]``: two images of two different classes,
each tagged with its slot's label embedding, and a query tagged with the third
("unknown") embedding.  Target ``y = 2c - 1`` with ``c`` the slot holding the query's
class.  Every image is cut into non-overlapping ``patch x patch`` patches (row-major
grid, pixels row-major, channels last); a patch is one token:

    x_t = LN(patch) + PE_t + E_m,      t = n_patches * m + j   (slot m, patch j)

with ``LN`` the affine-free LayerNorm, ``PE`` the sinusoidal code over the whole episode
standardised over all its entries, and ``E`` a frozen ``N(0, 1)`` label embedding
``(3, N0)``.  For sklearn's 8x8 digits at patch 4: ``N0 = 16``, ``S = 12``.

Project choices (theory.md §9.2): base classes {0..6}, novel classes {7, 8, 9}; base
images split stratified 60/20/20 into train / val / test (seed 0).  Fixed episode sets
are exactly balanced and ordered ``[+1] * n/2`` then ``[-1] * n/2`` (as the Markov task),
so kernel blocks of the two classes are contiguous.  OOD sets draw base-test episodes
and perturb every image of the episode (support and query): ``"noise"`` adds
``N(0, 0.25^2)`` pixel noise on the [0, 1] scale before LayerNorm, ``"transpose"``
transposes each image.  Floating-point user images with values above 1 are divided by
the data set's maximum (they must be non-negative); ``uint8`` images by 255.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import numpy as np

from .._errors import InputError, array, nonnegative_int, one_of, positive, require
from ._task import Task

LN_EPS = 1e-5
PE_EPS = 1e-6
N_SLOTS = 3  # support 0, support 1, query
IMAGE_SPLITS = ("train", "val", "test")
#: fixed-set names accepted by :meth:`ImageEpisodes.episodes`
POOLS = ("train", "val", "test", "novel")
PERTURBATIONS = (None, "noise", "transpose")


def layer_norm(z, eps: float = LN_EPS):
    """Affine-free LayerNorm over the last axis, biased variance (theory.md §9.2)."""
    z = np.asarray(z, dtype=np.float64)
    mu = z.mean(axis=-1, keepdims=True)
    var = z.var(axis=-1, keepdims=True)
    return (z - mu) / np.sqrt(var + eps)


def sinusoidal_positions(n_tokens: int, n0: int) -> np.ndarray:
    """``PE[t, 2k] = sin(t / 10000^(2k/N0))``, ``PE[t, 2k+1] = cos(...)``, standardised over all entries."""
    positive(n_tokens, "data.n_tokens", integer=True)
    positive(n0, "data.N0", integer=True)
    t = np.arange(n_tokens)[:, None]
    k2 = (np.arange(n0) // 2 * 2)[None, :]
    ang = t / np.power(10000.0, k2 / n0)
    pe = np.where(np.arange(n0)[None, :] % 2 == 0, np.sin(ang), np.cos(ang))
    return (pe - pe.mean()) / (pe.std() + PE_EPS)


def label_embeddings(n0: int, seed: int) -> np.ndarray:
    """Frozen i.i.d. ``N(0, 1)`` label embeddings ``(3, N0)``: slot 0, slot 1, unknown."""
    return np.random.default_rng(seed).standard_normal((N_SLOTS, n0))


def patchify(images, patch: int) -> np.ndarray:
    """``(n, h, w[, c])`` -> ``(n, n_patches, patch * patch * c)``; row-major grid and pixels."""
    im = np.asarray(images, dtype=np.float64)
    if im.ndim == 3:
        im = im[..., None]
    n, h, w, c = im.shape
    require(h % patch == 0 and w % patch == 0, "data.patch", f"{patch} must divide the image size {h}x{w}")
    g = im.reshape(n, h // patch, patch, w // patch, patch, c).transpose(0, 1, 3, 2, 4, 5)
    return g.reshape(n, (h // patch) * (w // patch), patch * patch * c)


def _resize(images: np.ndarray, size: int) -> np.ndarray:
    from scipy.ndimage import zoom

    n, h, w = images.shape[:3]
    if (h, w) == (size, size):
        return images
    factors = (1, size / h, size / w) + (1,) * (images.ndim - 3)
    return zoom(images, factors, order=1)


def _scale(images: np.ndarray) -> np.ndarray:
    if images.dtype == np.uint8:
        return images.astype(np.float64) / 255.0
    im = images.astype(np.float64)
    require(bool(np.all(im >= 0)), "data.images", "float images must be non-negative")
    top = float(im.max()) if im.size else 1.0
    return im / top if top > 1.0 else im


def stratified_split(labels, fractions=(0.6, 0.2, 0.2), seed: int = 0) -> np.ndarray:
    """Per-image split names (``"train"``/``"val"``/``"test"``), stratified by class."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    out = np.empty(labels.shape[0], dtype="<U5")
    cum = np.cumsum(fractions) / np.sum(fractions)
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        cuts = np.round(cum * len(idx)).astype(int)
        out[idx[: cuts[0]]] = "train"
        out[idx[cuts[0] : cuts[1]]] = "val"
        out[idx[cuts[1] :]] = "test"
    return out


@dataclass(frozen=True)
class ImageEpisodes:
    """Images, their splits and the frozen token codes; draws episode sets on demand."""

    images: np.ndarray  # (n, h, w, c) on [0, 1]
    labels: np.ndarray  # (n,) int
    split: np.ndarray  # (n,) "train" | "val" | "test"
    base_classes: tuple[int, ...]
    novel_classes: tuple[int, ...]
    patch: int = 4
    embed_seed: int = 1
    name: str = "images"
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        im = array(self.images, "data.images")
        require(im.ndim == 4, "data.images", f"must be (n, h, w, c) here, got shape {im.shape}")
        lab = array(self.labels, "data.labels", shape=(im.shape[0],), dtype_kind="iu")
        split = np.asarray(self.split).astype(str)
        require(split.shape == lab.shape, "data.split", f"needs one entry per image, got shape {split.shape}")
        bad = sorted(set(split.tolist()) - set(IMAGE_SPLITS))
        if bad:
            raise InputError(f"data.split: unknown value {bad[0]!r}; expected 'train', 'val' or 'test'")
        positive(self.patch, "data.patch", integer=True)
        nonnegative_int(self.embed_seed, "data.embed_seed")
        base, novel = tuple(int(c) for c in self.base_classes), tuple(int(c) for c in self.novel_classes)
        require(len(base) >= 2, "data.base_classes", f"needs at least 2 classes, got {base}")
        require(not set(base) & set(novel), "data.novel_classes", "must not overlap the base classes")
        present = set(lab.tolist())
        for c in base + novel:
            require(c in present, "data.classes", f"class {c} has no image")
        object.__setattr__(self, "images", im.astype(np.float64))
        object.__setattr__(self, "labels", lab.astype(int))
        object.__setattr__(self, "split", split)
        object.__setattr__(self, "base_classes", base)
        object.__setattr__(self, "novel_classes", novel)
        patchify(self.images[:1], self.patch)  # validates the patch size
        object.__setattr__(self, "meta", dict(self.meta))

    # ---- token geometry -------------------------------------------------------------------
    @property
    def n_patches(self) -> int:
        h, w = self.images.shape[1:3]
        return (h // self.patch) * (w // self.patch)

    @property
    def n0(self) -> int:
        return self.patch * self.patch * self.images.shape[3]

    @property
    def n_tokens(self) -> int:
        return N_SLOTS * self.n_patches

    @property
    def positions(self) -> np.ndarray:
        return sinusoidal_positions(self.n_tokens, self.n0)

    @property
    def embeddings(self) -> np.ndarray:
        return label_embeddings(self.n0, self.embed_seed)

    def tokens(self, episode_images) -> np.ndarray:
        """Episode images ``(n, 3, h, w, c)`` -> tokens ``(n, S, N0)``."""
        ep = np.asarray(episode_images, dtype=np.float64)
        n = ep.shape[0]
        p = layer_norm(patchify(ep.reshape(n * N_SLOTS, *ep.shape[2:]), self.patch))
        p = p.reshape(n, N_SLOTS, self.n_patches, self.n0) + self.embeddings[None, :, None, :]
        return p.reshape(n, self.n_tokens, self.n0) + self.positions[None]

    # ---- episodes ---------------------------------------------------------------------------
    def _pool(self, pool: str):
        one_of(pool, POOLS, "data.pool")
        if pool == "novel":
            classes = self.novel_classes
            mask = np.isin(self.labels, classes)
        else:
            classes = self.base_classes
            mask = np.isin(self.labels, classes) & (self.split == pool)
        require(len(classes) >= 2, f"data.{pool}", f"needs at least 2 classes, got {classes}")
        by_class = {c: np.flatnonzero(mask & (self.labels == c)) for c in classes}
        for c, idx in by_class.items():
            require(len(idx) >= 2, f"data.{pool}", f"class {c} has {len(idx)} images, needs >= 2")
        return classes, by_class

    def episode_indices(self, pool: str, n: int, seed: int, balanced: bool = True):
        """Image indices ``(n, 3)`` (support 0, support 1, query) and targets ``y`` (``(n,)``, +-1).

        ``balanced``: exactly ``n/2`` episodes per target, ordered +1 then -1; otherwise the
        query slot is a fair coin per episode.
        """
        positive(n, "data.n_episodes", integer=True)
        nonnegative_int(seed, "data.seed")
        classes, by_class = self._pool(pool)
        rng = np.random.default_rng(seed)
        if balanced:
            require(n % 2 == 0, "data.n_episodes", f"must be even for balanced sets, got {n}")
            c = np.concatenate([np.ones(n // 2, int), np.zeros(n // 2, int)])
        else:
            c = rng.integers(0, 2, size=n)
        K = len(classes)
        first = rng.integers(0, K, size=n)
        second = (first + 1 + rng.integers(0, K - 1, size=n)) % K  # distinct, random slot order
        sizes = np.array([len(by_class[k]) for k in classes])
        flat = np.concatenate([by_class[k] for k in classes])
        start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        pos0 = (rng.random(n) * sizes[first]).astype(int)
        pos1 = (rng.random(n) * sizes[second]).astype(int)
        qcls = np.where(c == 0, first, second)
        qsup = np.where(c == 0, pos0, pos1)
        posq = (rng.random(n) * (sizes[qcls] - 1)).astype(int)
        posq = posq + (posq >= qsup)  # distinct from the query class's support image
        idx = np.stack([flat[start[first] + pos0], flat[start[second] + pos1], flat[start[qcls] + posq]], axis=1)
        return idx, (2 * c - 1).astype(np.float64)

    def episodes(
        self, pool: str, n: int, seed: int, perturb: str | None = None, balanced: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """Tokens ``(n, S, N0)`` and targets ``(n,)`` of an episode set drawn from ``pool``."""
        one_of(perturb, PERTURBATIONS, "data.perturb")
        idx, y = self.episode_indices(pool, n, seed, balanced)
        ep = self.images[idx]  # (n, 3, h, w, c)
        if perturb == "noise":
            rng = np.random.default_rng([seed, 1])
            ep = ep + 0.25 * rng.standard_normal(ep.shape)
        elif perturb == "transpose":
            require(ep.shape[2] == ep.shape[3], "data.perturb", "transpose needs square images")
            ep = np.swapaxes(ep, 2, 3)
        return self.tokens(ep), y

    def episode_sets(self, P: int = 600, n_eval: int = 1000, seed: int = 0) -> dict:
        """The fixed sets of theory.md §9.2: train (``P``), val, test, novel, ood_noise, ood_transpose.

        Seeds are ``seed + k`` per set (recorded in the returned ``"seeds"`` entry).
        """
        names = [
            ("train", "train", None, P),
            ("val", "val", None, n_eval),
            ("test", "test", None, n_eval),
            ("novel", "novel", None, n_eval),
            ("ood_noise", "test", "noise", n_eval),
            ("ood_transpose", "test", "transpose", n_eval),
        ]
        out, seeds = {}, {}
        for k, (name, pool, perturb, n) in enumerate(names):
            if pool == "novel" and len(self.novel_classes) < 2:
                continue
            seeds[name] = seed + k
            out[name] = self.episodes(pool, n, seed + k, perturb)
        out["seeds"] = seeds
        return out

    def task(self, layers, sets: dict, test: str = "test", name: str | None = None) -> Task:
        """A :class:`Task` with the ``"train"`` set, the ``test`` set and fixed attention ``layers``."""
        require(test in sets, "data.test", f"unknown set {test!r}; have {sorted(k for k in sets if k != 'seeds')}")
        (xtr, ytr), (xte, yte) = sets["train"], sets[test]
        meta = dict(
            self.meta,
            task=self.name,
            patch=self.patch,
            embed_seed=self.embed_seed,
            test_set=test,
            base_classes=list(self.base_classes),
            novel_classes=list(self.novel_classes),
            set_seeds=dict(sets.get("seeds", {})),
        )
        return Task(xtr, ytr, xte, yte, tuple(layers), name=name or f"{self.name}-{test}", meta=meta)


def with_test_set(task: Task, x, y, name: str | None = None) -> Task:
    """The same task (training set, attention) evaluated on another test set."""
    return replace(task, x_test=x, y_test=y, name=name or task.name)


def image_episodes(
    images,
    labels,
    split=None,
    *,
    base_classes=None,
    novel_classes=(),
    patch: int = 4,
    size: int | None = None,
    channels: int | None = None,
    split_seed: int = 0,
    embed_seed: int = 1,
    name: str = "images",
) -> ImageEpisodes:
    """Episode source from user arrays: ``images`` ``(n, h, w)`` or ``(n, h, w, c)``, ``labels`` ``(n,)``.

    ``size``: resize to ``size x size`` (bilinear; must be a multiple of ``patch``; default:
    keep).  ``channels``: repeat a greyscale channel (the paper's Omniglot setting is size 32,
    channels 3, patch 8: ``N0 = 192``, ``S = 48``).  ``split``: per-image ``"train"/"val"/"test"``,
    default a stratified 60/20/20 split with ``split_seed``.  ``base_classes`` default: every
    class not in ``novel_classes``.
    """
    im = array(images, "data.images")
    require(im.ndim in (3, 4), "data.images", f"must be (n, h, w) or (n, h, w, c), got shape {im.shape}")
    lab = array(labels, "data.labels", shape=(im.shape[0],), dtype_kind="iu")
    im = _scale(im)
    if im.ndim == 3:
        im = im[..., None]
    if size is not None:
        positive(size, "data.size", integer=True)
        require(size % patch == 0, "data.size", f"must be a multiple of the patch size {patch}, got {size}")
        im = _resize(im, size)
    if channels is not None:
        positive(channels, "data.channels", integer=True)
        require(
            im.shape[3] in (1, channels),
            "data.channels",
            f"can only repeat a single channel, images have {im.shape[3]}",
        )
        im = np.repeat(im, channels // im.shape[3], axis=3)
    if split is None:
        split = stratified_split(lab, seed=split_seed)
    novel = tuple(int(c) for c in novel_classes)
    base = (
        tuple(int(c) for c in np.unique(lab) if int(c) not in novel)
        if base_classes is None
        else tuple(int(c) for c in base_classes)
    )
    meta = dict(split_seed=split_seed, size=-1 if size is None else size)
    return ImageEpisodes(im, lab, np.asarray(split), base, novel, patch, embed_seed, name, meta)


def load_image_arrays(path, **kwargs) -> ImageEpisodes:
    """Read an ``.npz`` with ``images``, ``labels`` and optional ``split``; see :func:`image_episodes`."""
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        raise InputError(f"data.file: cannot read {str(p)!r} (no such file)")
    try:
        with np.load(p, allow_pickle=False) as z:
            d = {k: z[k] for k in z.files}
    except Exception as exc:
        raise InputError(f"data.file: cannot read {str(p)!r} as .npz ({type(exc).__name__})") from None
    for key in ("images", "labels"):
        require(key in d, f"data.{key}", f"missing from {str(p)!r}")
    split = d["split"].astype(str) if "split" in d else None
    kwargs.setdefault("name", p.stem)
    return image_episodes(d["images"], d["labels"], split, **kwargs)


def digits_episodes(
    patch: int = 4, base_classes=tuple(range(7)), novel_classes=(7, 8, 9), split_seed: int = 0, embed_seed: int = 1
) -> ImageEpisodes:
    """sklearn's bundled 8x8 handwritten digits (no download), pixels / 16 (theory.md §9.2)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    images = d.images.astype(np.float64) / 16.0
    src = image_episodes(
        images,
        d.target.astype(int),
        None,
        base_classes=base_classes,
        novel_classes=novel_classes,
        patch=patch,
        split_seed=split_seed,
        embed_seed=embed_seed,
        name="digits",
    )
    return src


__all__ = [
    "ImageEpisodes",
    "digits_episodes",
    "image_episodes",
    "load_image_arrays",
    "layer_norm",
    "sinusoidal_positions",
    "label_embeddings",
    "patchify",
    "stratified_split",
    "with_test_set",
    "POOLS",
    "PERTURBATIONS",
]
