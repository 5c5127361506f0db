"""Generalized Potts model: Hamiltonian, conditionals, exact enumeration, coupling generators.

Convention (docs/potts.md §1, project convention): each unordered pair counted once,

    H(s) = - sum_{i<j} J_ij U_{s_i s_j} - sum_i h_i(s_i),    P_beta(s) = exp(-beta H(s)) / Z .

``J`` (L, L) symmetric with zero diagonal, ``U`` (C, C) symmetric, ``h`` (L, C) or ``None``.
Colours are 0-based integers in [0, C).  Only ``beta J (x) U`` is identifiable from data.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import InputError, array, one_of, positive, require

#: the coupling ensembles of :func:`generate_couplings` (``kind``; potts.md §1.2)
GENERATORS = ("G1", "G2", "G3", "G4")


@dataclass(frozen=True)
class Potts:
    """A generalized Potts model ``(beta, J, U, h)`` (potts.md §1), validated at construction."""

    J: np.ndarray
    U: np.ndarray
    beta: float = 1.0
    h: np.ndarray | None = None

    def __post_init__(self):
        J = array(self.J, "J", ndim=2, dtype_kind="fi").astype(float)
        U = array(self.U, "U", ndim=2, dtype_kind="fi").astype(float)
        require(J.shape[0] == J.shape[1], "J", f"must be square, got {J.shape}")
        require(U.shape[0] == U.shape[1], "U", f"must be square, got {U.shape}")
        require(np.allclose(J, J.T), "J", "must be symmetric")
        require(np.allclose(np.diag(J), 0.0), "J", "must have a zero diagonal")
        require(np.allclose(U, U.T), "U", "must be symmetric")
        positive(float(self.beta), "beta")
        object.__setattr__(self, "J", J)
        object.__setattr__(self, "U", U)
        object.__setattr__(self, "beta", float(self.beta))
        if self.h is not None:
            h = array(self.h, "h", shape=(J.shape[0], U.shape[0]), dtype_kind="fi").astype(float)
            object.__setattr__(self, "h", h)

    @property
    def L(self) -> int:
        return self.J.shape[0]

    @property
    def C(self) -> int:
        return self.U.shape[0]

    @property
    def fields(self) -> np.ndarray:
        return np.zeros((self.L, self.C)) if self.h is None else self.h

    def with_beta(self, beta: float) -> "Potts":
        return Potts(self.J, self.U, beta, self.h)


def check_sequences(
    s, C: int | None = None, L: int | None = None, field: str = "sequences", min_rows: int = 1
) -> np.ndarray:
    """Validate sequences (M, L): integers (integral floats are accepted, NaN and fractions are not),
    at least ``min_rows`` rows, colours in [0, C); returns int32.  Every failure is one line naming
    ``field``."""
    s = np.asarray(s)
    require(s.dtype.kind in "iuf", field, f"must be integer colours, got dtype {s.dtype}")
    require(s.ndim == 2, field, f"must have 2 dimensions (sequences x sites), got shape {s.shape}")
    if s.dtype.kind == "f":
        require(bool(np.all(np.isfinite(s))), field, "contains NaN or inf")
        require(bool(np.all(s == np.round(s))), field, "must be integer colours, got non-integer entries")
    require(s.shape[0] >= min_rows, field, f"needs >= {min_rows} sequences, got {s.shape[0]}")
    if L is not None:
        require(s.shape[1] == L, field, f"must have {L} columns, got {s.shape[1]}")
    require(s.size > 0, field, "is empty")
    lo = int(s.min())
    require(lo >= 0, field, f"colours must be >= 0, got {lo}")
    if C is not None:
        hi = int(s.max())
        require(hi < C, field, f"colours must be < C = {C}, got {hi}")
    return s.astype(np.int32)


def check_weights(weights, M: int, field: str = "weights") -> np.ndarray:
    """Sequence weights (M,) of a pseudo-likelihood: finite, >= 0 and not all zero (``None``: ones); float64.
    Every failure is one line naming ``field``."""
    if weights is None:
        return np.ones(M)
    w = np.asarray(weights)
    require(w.dtype.kind in "iuf", field, f"must be numbers, got dtype {w.dtype}")
    require(w.shape == (M,), field, f"must have shape ({M},) (one per sequence), got {w.shape}")
    w = w.astype(float)
    require(bool(np.all(np.isfinite(w))), field, "contains NaN or inf")
    require(bool(np.all(w >= 0)), field, f"must be >= 0, got {w.min()}")
    require(bool(w.sum() > 0), field, "are all zero")
    return w


def energy(s, J, U, h=None):
    """Hamiltonian H(s) per sequence (potts.md §1); ``s`` (..., L) int -> (...)."""
    s = jnp.asarray(s)
    U = jnp.asarray(U)
    # sum_{i<j} J_ij U[s_i, s_j] = 1/2 sum_{i,j} J_ij U[s_i, s_j]  (J symmetric, zero diagonal)
    e = -0.5 * jnp.sum(jnp.asarray(J, U.dtype) * U[s[..., :, None], s[..., None, :]], axis=(-1, -2))
    if h is not None:
        h = jnp.asarray(h, U.dtype)
        e = e - jnp.sum(h[jnp.arange(h.shape[0]), s], axis=-1)
    return e


def local_fields(s, J, U, h=None):
    """sum_{j != i} J_ij U[:, s_j] + h_i : (..., L, C), the conditional logits divided by beta (§1.1)."""
    Us = jnp.asarray(U)[jnp.asarray(s)]  # (..., L, C), U symmetric
    f = jnp.einsum("ij,...jc->...ic", jnp.asarray(J), Us)
    if h is not None:
        f = f + jnp.asarray(h)
    return f


def conditional_logits(model: Potts, s):
    """Exact single-site conditional logits beta (sum_j J_ij U x_j + h_i), (M, L, C) (§1.1)."""
    return model.beta * local_fields(s, model.J, model.U, model.h)


def pseudo_nll(logits, s, weights=None):
    """Mean over sequences and sites of -log softmax(logits)[s_i] (the PL loss, §4); with sequence
    ``weights`` (M,) the weighted mean sum_m w_m sum_i (...) / (L sum_m w_m) (docs/potts_proteins.md §2)."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    ll = jnp.take_along_axis(logp, jnp.asarray(s)[..., None], axis=-1)[..., 0]
    if weights is None:
        return -jnp.mean(ll)
    w = jnp.asarray(weights, ll.dtype)
    return -jnp.sum(w[:, None] * ll) / (jnp.sum(w) * ll.shape[-1])


def nll_star(model: Potts, s) -> float:
    """Bayes-optimal reference NLL* on sequences ``s`` with the true conditionals (§2.4)."""
    return float(pseudo_nll(conditional_logits(model, s), s))


def all_states(L: int, C: int) -> np.ndarray:
    """All ``C**L`` sequences, ``(C**L, L)`` int32 (lexicographic); for exact enumeration only."""
    require(C**L <= 2_000_000, "L", f"C**L = {C**L} too large to enumerate")
    return np.array(list(itertools.product(range(C), repeat=L)), dtype=np.int32)


def exact_distribution(model: Potts) -> tuple[np.ndarray, np.ndarray]:
    """(states, probabilities) of the Gibbs measure by enumeration (tiny L, C only)."""
    states = all_states(model.L, model.C)
    logw = -model.beta * np.asarray(energy(states, model.J, model.U, model.h))
    logw -= logw.max()
    p = np.exp(logw)
    return states, p / p.sum()


def state_index(s: np.ndarray, C: int) -> np.ndarray:
    """Lexicographic index of each sequence, matching :func:`all_states`."""
    L = s.shape[-1]
    return (np.asarray(s) * (C ** np.arange(L - 1, -1, -1))).sum(-1)


def _sym_zero_diag(G):
    J = G + G.T
    np.fill_diagonal(J, 0.0)
    return J


def _sinkhorn_symmetric(W, iters=500):
    """Symmetric positive W -> D W D with equal row sums (= 1) by symmetric Sinkhorn."""
    d = np.ones(W.shape[0])
    for _ in range(iters):
        d = np.sqrt(d / (W @ d))
    return d[:, None] * W * d[None, :]


def generate_couplings(
    kind: str, L: int, C: int, seed: int = 0, *, band: int = 2, n_long: int | None = None, w: float = 1.0, d: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded ground-truth couplings (J, U) of generator G1..G4 (potts.md §1.2, project choice).

    G1 frustrated Gaussian J and U; G2 |G| positions (J >= 0) with Gaussian U;
    G3 banded |i-j| <= ``band`` plus ``n_long`` (default L//4) random long-range contacts of
    weight ``w`` N(0,1), U = E E^T / d; G4 symmetric positive zero-diagonal J with unit row
    sums (symmetric Sinkhorn), Gaussian U.  All G_ij, H_ab i.i.d. N(0, 1).
    """
    one_of(kind, GENERATORS, "couplings.kind")
    positive(L, "L", integer=True)
    positive(C, "C", integer=True)
    require(L >= 2, "L", f"must be >= 2, got {L}")
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((L, L))
    H = rng.standard_normal((C, C))
    U = (H + H.T) / np.sqrt(2 * C)
    if kind == "G1":
        J = _sym_zero_diag(G) / np.sqrt(2 * L)
    elif kind == "G2":
        J = _sym_zero_diag(np.abs(G)) / np.sqrt(2 * L)
    elif kind == "G3":
        i, j = np.triu_indices(L, 1)
        B = np.zeros((L, L), bool)
        B[i[(j - i) <= band], j[(j - i) <= band]] = True
        far = np.flatnonzero((j - i) > band)
        n_long = L // 4 if n_long is None else n_long
        pick = rng.choice(far, size=min(n_long, far.size), replace=False)
        B[i[pick], j[pick]] = True
        J = np.triu(w * B * G, 1)
        J = J + J.T
        E = rng.standard_normal((C, d))
        U = E @ E.T / d
    else:  # G4
        W = _sinkhorn_symmetric(_sym_zero_diag(np.abs(G)))
        np.fill_diagonal(W, 0.0)
        J = (W + W.T) / 2
    np.fill_diagonal(J, 0.0)
    return J, U


__all__ = [
    "Potts",
    "GENERATORS",
    "generate_couplings",
    "energy",
    "local_fields",
    "conditional_logits",
    "pseudo_nll",
    "nll_star",
    "all_states",
    "exact_distribution",
    "state_index",
    "check_sequences",
    "check_weights",
    "InputError",
]
