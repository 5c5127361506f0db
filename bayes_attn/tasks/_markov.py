"""Hidden-Markov-chain sequence classification (docs/theory.md §9.1).

Generation follows "markov option E" of the authors' code; the random stream is
numpy's PCG64 (``numpy.random.default_rng(seed)``), so the data differ from the
authors' PyTorch draws while following the same law.  Seeds are recorded in
``Task.meta``.
"""

from __future__ import annotations

import numpy as np

from .._errors import one_of, positive, require, nonnegative_int
from .._memory import require_memory
from ..network import HeadLayer
from ._task import Task

N_STEPS = 30  # hidden states t = 1..30
D_FEAT = 200  # emission dimension
S_TOKENS = N_STEPS + 1  # BOS + 30
N0 = D_FEAT + S_TOKENS  # 231
ROWS = 1024  # sequences whose noise is drawn at a time (markov_sequences)

#: path short names of the 4-path configuration, in flattened order (h_1 most significant)
MARKOV_PATH_SHORT = {"good,unif": "g", "good,rand": "a1", "rand,unif": "d", "rand,rand": "a2"}


def _emission_vectors():
    v_plus = np.sqrt(2.0) * np.concatenate([np.ones(100), np.zeros(100)])
    v_minus = np.sqrt(2.0) * np.concatenate([np.zeros(100), np.ones(100)])
    return v_plus, v_minus


def markov_sequences(n: int, seed: int, noise=(1.0, 1.0, 1.0), p_stay=(0.7, 0.3)):
    """``n`` token sequences ``(n, 31, 231)`` and labels ``(n,)``: ``[+1]*n/2`` then ``[-1]*n/2``."""
    require(n % 2 == 0, "data.P", f"must be even (P/2 sequences per class), got {n}")
    eps_par, eps_perp, eps_o = (float(e) for e in noise)
    rng = np.random.default_rng(seed)
    v_plus, v_minus = _emission_vectors()
    u_par = (v_plus + v_minus) / np.linalg.norm(v_plus + v_minus)
    u_perp = (v_plus - v_minus) / np.linalg.norm(v_plus - v_minus)
    P_par, P_perp = np.outer(u_par, u_par), np.outer(u_perp, u_perp)
    P_o = np.eye(D_FEAT) - P_par - P_perp
    noise_map = eps_par * P_par + eps_perp * P_perp + eps_o * P_o  # symmetric

    labels = np.concatenate([np.ones(n // 2), -np.ones(n // 2)])
    stay = np.where(labels > 0, p_stay[0], p_stay[1])
    states = np.empty((n, N_STEPS))
    states[:, 0] = rng.choice([1.0, -1.0], size=n)
    for t in range(1, N_STEPS):
        keep = rng.random(n) < stay
        states[:, t] = np.where(keep, states[:, t - 1], -states[:, t - 1])
    x = np.empty((n, S_TOKENS, N0))
    x[:, 0, :D_FEAT] = 0.0  # BOS token first
    x[:, :, D_FEAT:] = np.eye(S_TOKENS)  # one-hot positions
    # emission + noise, written into the preallocated output (each temporary of this size costs more in fresh
    # memory pages than in arithmetic; the sums are the same numbers as v_{s_t} + z @ noise_map).  With equal
    # noise in every direction (the default) the map is exactly the identity, and z @ I is z to the last bit
    # (every other term of each sum is an exact zero), so the product is skipped.
    # The noise is drawn ROWS sequences at a time, straight into the output: the generator fills in C order, so
    # the blocks hold the numbers of one (n, 30, 200) draw, without its temporary (480 MB at n = 10^4).
    identity = np.array_equal(noise_map, np.eye(D_FEAT))
    for i in range(0, n, ROWS):
        xi = x[i : i + ROWS, 1:, :D_FEAT]
        xi[...] = rng.standard_normal(xi.shape)
        if not identity:
            np.matmul(xi, noise_map, out=xi)
        up = states[i : i + ROWS] > 0
        xi[up] += v_plus
        xi[~up] += v_minus
    return x, labels


def markov_head_W(kind: str, p_blank: float = 1.0, seed: int = 0) -> np.ndarray:
    """Hand-built head ``W`` (``(231, 231)``, before ``beta_att``) of theory.md §9.1.

    ``kind`` in {"good", "different", "uniform", "blank"}; ``blank`` uses ``p_blank`` and ``seed``.
    """
    one_of(kind, ("good", "different", "uniform", "blank"), "attention.head")
    v_plus, v_minus = _emission_vectors()
    q = (v_plus - v_minus) / 200.0  # q . v_pm = pm 1
    W = np.zeros((N0, N0))
    F, Pz = slice(0, D_FEAT), slice(D_FEAT, N0)
    if kind in ("good", "different"):
        W[F, F] = (1.0 if kind == "good" else -1.0) * np.outer(q, q)
        W_pos = np.zeros((S_TOKENS, S_TOKENS))
        for k in range(1, N_STEPS):
            W_pos[k, k + 1] = 1.0  # key t-1 for query t >= 2
        W_pos[0, 1:] = 1.5  # key BOS for every query
        W[Pz, Pz] = W_pos
    elif kind == "uniform":
        W[Pz, Pz] = 1.0
    else:
        rng = np.random.default_rng(seed)
        W[F, F] = p_blank * rng.standard_normal((D_FEAT, D_FEAT)) / D_FEAT
        W[Pz, Pz] = p_blank * rng.standard_normal((S_TOKENS, S_TOKENS))
        W[F, Pz] = p_blank * rng.standard_normal((D_FEAT, S_TOKENS)) / np.sqrt(D_FEAT)
        W[Pz, F] = p_blank * rng.standard_normal((S_TOKENS, D_FEAT)) / np.sqrt(D_FEAT)
    return W


#: the ``paths`` configurations of :func:`markov_task`: name -> (layer-1 heads, layer-2 heads, noise); a head is
#: ``(name, p)`` with ``p`` the scale of a blank (``"rand"``) head, ``None`` for the others; the noise is the three
#: strengths (parallel, perpendicular, out-of-plane)
MARKOV_CONFIGS = {
    4: ((("good", None), ("rand", 1.0)), (("unif", None), ("rand", 1.0)), (1.0, 1.0, 1.0)),
    2: ((("good", None), ("rand", 0.0)), (("unif", None),), (1.0, 1.0, 5.0)),
    "good": ((("good", None),), (("unif", None),), (1.0, 1.0, 1.0)),
    "good+denoising": ((("good", None), ("rand", 1.0)), (("unif", None),), (1.0, 1.0, 1.0)),
}

_KIND = {"good": "good", "diff": "different", "unif": "uniform", "rand": "blank"}
#: head names accepted in ``heads=[[...], [...]]``
HEAD_NAMES = tuple(_KIND)


def markov_layers(paths=4, head_seeds=(147, 247), beta_att: float = 10.0, p_blank: float | None = None, heads=None):
    """Hand-built attention layers of a Markov configuration.

    ``heads`` (optional) overrides the configuration's heads with names per layer, e.g.
    ``[["good", "rand"], ["unif", "rand"]]``; names: good, diff, unif, rand (blank(p_blank)).
    Layer ``l`` draws its (first) blank head from ``head_seeds[l]``; a layer's ``k``-th further blank head
    (``k >= 1``) from the seed sequence ``[head_seeds[l], k]`` and is named ``rand_{k+1}``, so that two random
    heads of one layer differ (an earlier version drew them from the same seed, so they were identical).
    """
    if heads is None:
        layer_heads = [[(n, p) for n, p in layer] for layer in MARKOV_CONFIGS[paths][:2]]
    else:
        require(
            isinstance(heads, (list, tuple)) and len(heads) >= 1,
            "data.heads",
            "must be a list of layers, each a list of head names",
        )
        layer_heads = []
        for l, layer in enumerate(heads):
            require(
                isinstance(layer, (list, tuple)) and len(layer) >= 1,
                f"data.heads[{l}]",
                "must be a non-empty list of head names",
            )
            for h, name in enumerate(layer):
                require(
                    name in _KIND,
                    f"data.heads[{l}][{h}]",
                    f"unknown head {name!r}; expected one of {', '.join(HEAD_NAMES)}",
                )
            layer_heads.append([(n, 1.0 if n == "rand" else None) for n in layer])
    require(
        len(head_seeds) >= len(layer_heads),
        "data.head_seeds",
        f"needs one seed per layer ({len(layer_heads)}), got {list(head_seeds)}",
    )
    layers = []
    for l, layer in enumerate(layer_heads):
        Ws, names, n_rand = [], [], 0
        for name, p in layer:
            p_eff = p if p_blank is None or p is None or p == 0.0 else p_blank
            seed = head_seeds[l] if n_rand == 0 or p_eff == 0.0 else [head_seeds[l], n_rand]
            Ws.append(markov_head_W(_KIND[name], p_blank=p_eff or 0.0, seed=seed))
            names.append(name if n_rand == 0 or name != "rand" else f"rand_{n_rand + 1}")
            n_rand += name == "rand"
        layers.append(HeadLayer.w(np.stack(Ws), beta=beta_att, names=names))
    return tuple(layers)


def markov_memory(P: int, n_test: int, n_paths: int) -> float:
    """Bytes a Markov task holds at its peak, rounded up: the float64 inputs ``(P + n_test, 31, 231)``, ``Phi`` of
    both splits twice (the path inputs and ``Phi``) and the intermediates of one block of
    :meth:`~bayes_attn.tasks.Task.path_inputs` (1.2 GB, measured about 1 GB at 2048 inputs)."""
    n = P + n_test
    return 8.0 * n * S_TOKENS * N0 + 2 * 8.0 * n * N0 * n_paths + 1.2e9


def markov_task(
    P: int = 100,
    n_test: int = 1000,
    paths=4,
    *,
    seed_train: int = 27,
    seed_test: int = 59,
    head_seeds=(147, 247),
    beta_att: float = 10.0,
    p_blank: float | None = None,
    noise=None,
    heads=None,
) -> Task:
    """The hidden-Markov task of theory.md §9.1.

    ``paths``: 4 (good, denoising, two adversarial), 2 ("noisier data": good + denoising,
    out-of-plane noise 5), or the GP-baseline subsets ``"good"`` and ``"good+denoising"``.
    ``heads`` overrides the heads by name (see :func:`markov_layers`); the noise still follows ``paths``.
    """
    require(
        paths in MARKOV_CONFIGS, "data.paths", f"unknown value {paths!r}; expected 4, 2, 'good' or 'good+denoising'"
    )
    positive(P, "data.P", integer=True)
    positive(n_test, "data.n_test", integer=True)
    positive(beta_att, "data.beta_att")
    for name, s in (("data.seed_train", seed_train), ("data.seed_test", seed_test)):
        nonnegative_int(s, name)
    noise = MARKOV_CONFIGS[paths][2] if noise is None else tuple(noise)
    require(len(noise) == 3, "data.noise", f"needs 3 strengths (parallel, perpendicular, out-of-plane), got {noise!r}")
    layers = markov_layers(paths, head_seeds, beta_att, p_blank, heads)
    n_paths = int(np.prod([layer.n_heads for layer in layers]))
    require_memory(markov_memory(P, n_test, n_paths), "data.P", f"the Markov task at P = {P}, n_test = {n_test}")
    x_tr, y_tr = markov_sequences(P, seed_train, noise)
    x_te, y_te = markov_sequences(n_test, seed_test, noise)
    meta = dict(
        task="markov",
        paths=str(paths),
        P=P,
        n_test=n_test,
        seed_train=seed_train,
        seed_test=seed_test,
        head_seeds=list(head_seeds),
        beta_att=beta_att,
        noise=list(noise),
        p_blank=-1.0 if p_blank is None else p_blank,
    )
    if heads is not None:
        meta["heads"] = [list(layer) for layer in heads]
    return Task(x_tr, y_tr, x_te, y_te, layers, name=f"markov-{paths}", meta=meta)


def markov_token_basis(x, k: int) -> np.ndarray:
    """``(N0, k + 31)``: a label-free basis of Markov token directions (docs/evidence.md §7, "pos+PC2" for
    ``k = 2``): the top-``k`` principal directions of the tokens' content entries (uncentred second moment over
    every token of ``x``, each column divided by the square root of its eigenvalue, so that a unit coordinate is
    one standard deviation of the data), then the positional one-hot coordinates."""
    X = np.asarray(x).reshape(-1, N0)[:, :D_FEAT]
    w, V = np.linalg.eigh(X.T @ X / len(X))
    w, V = w[::-1][:k], V[:, ::-1][:, :k]
    B = np.zeros((N0, k + S_TOKENS))
    B[:D_FEAT, :k] = V / np.sqrt(w)
    B[D_FEAT:, k:] = np.eye(S_TOKENS)
    return B


__all__ = [
    "markov_task",
    "markov_memory",
    "markov_sequences",
    "markov_head_W",
    "markov_layers",
    "markov_token_basis",
    "MARKOV_CONFIGS",
    "MARKOV_PATH_SHORT",
]
