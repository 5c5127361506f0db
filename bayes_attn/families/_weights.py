"""Sequence reweighting and a validation split that does not leak near-duplicates (docs/potts_proteins.md §2).

Weight of sequence m: ``w_m = 1 / #{m' : id(m, m') >= theta}`` (the count includes m itself), with
``id`` the fraction of the L columns in which the two rows hold the same colour (gaps count as a colour,
as in plmc's default); ``M_eff = sum_m w_m``.  The O(M^2 L) count runs on the device in blocks of rows,
so memory is O(block * M) whatever M is.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import positive, require

#: default identity threshold of the reweighting (80 % identity, plmc's ``-t 0.2``)
THETA = 0.8
#: columns compared at a time: their identical-column count fits in a byte
CHUNK = 255


def check_theta(theta: float, field: str = "theta") -> float:
    """theta must lie in (0, 1]."""
    ok = isinstance(theta, (int, float, np.floating)) and not isinstance(theta, bool) and np.isfinite(theta)
    require(ok and 0 < theta <= 1, field, f"must be in (0, 1], got {theta!r}")
    return float(theta)


def _threshold(theta: float, L: int) -> int:
    """Smallest number of identical columns with count / L >= theta."""
    return int(np.ceil(theta * L - 1e-9))


@functools.partial(jax.jit, static_argnames=("block", "reduce"))
def _blocked(rows, others, thr, block: int, reduce: str):
    """For each row: the number (``reduce="count"``) of rows of ``others`` with >= thr identical columns,
    or the largest number of identical columns (``"max"``)."""
    M, L = rows.shape
    nb = -(-M // block)
    # identical columns are counted in bytes, CHUNK columns at a time (a byte holds the count, and XLA fuses the
    # comparison into its sum; one int32 sum over more columns held the whole (block, M, L) comparison)
    nc = -(-L // CHUNK)
    if nc == 1:  # one byte-sized sum: the program of every family of L <= CHUNK
        padded = jnp.pad(rows, ((0, nb * block - M), (0, 0)), constant_values=-1).reshape(nb, block, L)

        def one(rb):
            same = jnp.sum(rb[:, None, :] == others[None, :, :], axis=-1, dtype=jnp.uint8).astype(jnp.int32)
            return jnp.sum(same >= thr, axis=-1) if reduce == "count" else jnp.max(same, axis=-1)

        return jax.lax.map(one, padded).reshape(-1)[:M]
    padded = jnp.pad(rows, ((0, nb * block - M), (0, nc * CHUNK - L)), constant_values=-1)
    padded = padded.reshape(nb, block, nc, CHUNK)
    oth = jnp.pad(others, ((0, 0), (0, nc * CHUNK - L)), constant_values=-2).reshape(-1, nc, CHUNK)

    def one(rb):
        def chunk(acc, c):
            same = jnp.sum(rb[:, None, c, :] == oth[None, :, c, :], axis=-1, dtype=jnp.uint8)
            return acc + same.astype(jnp.int32), None

        same, _ = jax.lax.scan(chunk, jnp.zeros((block, oth.shape[0]), jnp.int32), jnp.arange(nc))
        return jnp.sum(same >= thr, axis=-1) if reduce == "count" else jnp.max(same, axis=-1)

    return jax.lax.map(one, padded).reshape(-1)[:M]


def _as_small_ints(s) -> jnp.ndarray:
    s = np.asarray(s)
    return jnp.asarray(s, jnp.int8 if s.max(initial=0) < 127 else jnp.int32)


def neighbour_counts(s, theta: float = THETA, *, block: int = 256) -> np.ndarray:
    """#{m' : id(m, m') >= theta} for every row of ``s`` (M, L), itself included."""
    check_theta(theta)
    positive(block, "block", integer=True)
    s = np.asarray(s)
    x = _as_small_ints(s)
    return np.asarray(_blocked(x, x, _threshold(theta, s.shape[1]), int(block), "count"))


def sequence_weights(s, theta: float = THETA, *, block: int = 256) -> np.ndarray:
    """Reweighting ``w_m = 1 / neighbour count`` (module docstring); ``w.sum()`` is M_eff."""
    return 1.0 / neighbour_counts(s, theta, block=block)


def max_identity(s, others, *, block: int = 256) -> np.ndarray:
    """Largest identity (fraction of columns) of each row of ``s`` to any row of ``others``."""
    s, others = np.asarray(s), np.asarray(others)
    big = max(s.max(initial=0), others.max(initial=0)) >= 127
    dt = jnp.int32 if big else jnp.int8
    n = _blocked(jnp.asarray(s, dt), jnp.asarray(others, dt), 0, int(block), "max")
    return np.asarray(n) / s.shape[1]


def split_validation(s, theta: float = THETA, *, fraction: float = 0.1, seed: int = 0, block: int = 256):
    """(train indices, validation indices) with no training row within ``theta`` identity of a validation row.

    A random ``fraction`` of the rows is held out; every other row whose identity to one of them is
    ``>= theta`` is dropped from the training part (it would be a near-duplicate of validation data).
    The dropped rows are in neither part: the hyper-parameters chosen on this split are then refitted on
    all rows (docs/potts_proteins.md §2)."""
    check_theta(theta)
    require(0 < fraction < 1, "fraction", f"must be in (0, 1), got {fraction}")
    s = np.asarray(s)
    M = s.shape[0]
    require(M >= 2, "sequences", f"need >= 2 rows for a validation split, got {M}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(M)
    n_val = max(1, int(round(fraction * M)))
    val, rest = np.sort(order[:n_val]), np.sort(order[n_val:])
    near = max_identity(s[rest], s[val], block=block) >= _threshold(theta, s.shape[1]) / s.shape[1] - 1e-12
    train = rest[~near]
    require(train.size >= 1, "theta", f"every training row lies within {theta} identity of the validation rows")
    return train, val


__all__ = ["THETA", "check_theta", "neighbour_counts", "sequence_weights", "max_identity", "split_validation"]
