"""The training set in path space: every kernel quantity as a problem of size ``r = N_0 n_pi`` (docs/theory.md §4.10).

The kernel is linear in ``U`` through the path features: with ``F = Phi.reshape(P, r)``,
``K_U = F (I_{N_0} kron U) F^T`` (eq. (4.2a)).  A thin QR factorisation ``F = Q R`` (``Q`` ``P x r`` with
orthonormal columns, ``R`` ``r x r``) turns the ``P`` training inputs into ``r`` *path-space points*: the rows of
``R``, read as features of the same shape ``(r, N_0, n_pi)``, with labels ``c = Q^T y``.  Then, for every ``U``
(eq. (4.10b)):

* ``ln det(K_U + T I_P) = ln det(R A R^T + T I_r) + (P - r) ln T``;
* ``y^T (K_U + T I_P)^{-1} y = c^T (R A R^T + T I_r)^{-1} c + |y_perp|^2 / T``, ``|y_perp|^2 = |y|^2 - |c|^2``;
* ``K_U(x*, X) (K_U + T I_P)^{-1} y`` and the predictive variance are those of the path-space points: the
  test/train kernel against ``R`` and the labels ``c`` (eq. (4.10d));
* the gradient, Hessian and traces in ``U`` are those of the path-space problem (the two offsets do not
  depend on ``U``).

So every consumer runs its dense code on ``r`` points instead of ``P``: the cost of an evaluation is
``O(r^3)`` whatever ``P``, memory ``O(r^2)``.  The factorisation is computed once, streamed over row blocks
of ``[F | y]`` (a tall-skinny QR: each block is stacked under the running triangle and factorised again), so
nothing ``P x P`` or ``P x r`` beyond one block is ever held; the last diagonal entry of the augmented
triangle is ``|y_perp|`` itself, with no cancellation.  No inverse of ``R`` is formed, so a rank-deficient
``F`` (``R`` singular) needs nothing special: ``R A R^T + T I`` stays positive definite for ``T > 0``.

**The policy** *(project choice)*, :func:`use_path_space`: path space iff ``r < P`` (an evaluation then
costs ``r^3`` instead of ``P^3``; below that the compression would enlarge the problem).  ``mode`` overrides
it (``"dense"`` / ``"path"``) for tests and comparisons.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

import jax.numpy as jnp
import numpy as np

from .._errors import InputError

#: rows of ``[F | y]`` factorised at a time by :func:`path_space` (about 30 MB of float64 at ``r = 924``)
BLOCK_ROWS = 4096

#: the values of the ``mode`` argument of :func:`use_path_space`
MODES = ("auto", "dense", "path")


def use_path_space(P: int, d: int, n: int, mode: str = "auto") -> bool:
    """The policy (module docstring): path space iff ``r = d n < P``, unless ``mode`` is ``"dense"``/``"path"``."""
    if mode not in MODES:
        raise InputError(f"path_space: unknown value {mode!r}; expected one of {', '.join(MODES)}")
    if mode != "auto":
        return mode == "path"
    return d * n < P


class PathSpace(NamedTuple):
    """The training set in path space (docs/theory.md eq. (4.10a)).

    ``phi``: ``(r, N_0, n_pi)``, the rows of ``R``; ``y``: ``(r,)``, ``c = Q^T y``; ``offset``: ``(2,)``, the
    number of dropped dimensions ``P - r`` and ``|y_perp|^2``, which :func:`energy_offset` turns into the
    constant that restores the full energy.
    """

    phi: np.ndarray
    y: np.ndarray
    offset: np.ndarray


def _triangle(a):
    """The ``w x w`` upper triangle ``T`` of a QR factorisation of ``a`` ``(m, w)``: ``T^T T = a^T a``; zero rows
    are appended where ``m < w`` (numpy then returns the ``m x w`` trapezoid)."""
    t = np.linalg.qr(a, mode="r")
    w = a.shape[1]
    return t if t.shape[0] == w else np.vstack([t, np.zeros((w - t.shape[0], w))])


def path_space_blocks(blocks: Iterable, d: int, n: int) -> PathSpace:
    """:class:`PathSpace` from an iterable of ``(phi_block, y_block)`` row blocks (eq. (4.10a)).

    The inputs need not be held at once: a caller that builds ``Phi`` block by block passes a generator.
    """
    r = d * n
    tri, P = np.zeros((0, r + 1)), 0
    for phi_b, y_b in blocks:
        phi_b, y_b = np.asarray(phi_b, dtype=np.float64), np.asarray(y_b, dtype=np.float64)
        if phi_b.shape[1:] != (d, n) or y_b.shape != (phi_b.shape[0],):
            raise InputError(f"path_space: a block of shape {phi_b.shape} / {y_b.shape}, expected (m, {d}, {n}) / (m,)")
        P += phi_b.shape[0]
        aug = np.concatenate([phi_b.reshape(-1, r), y_b[:, None]], axis=1)
        tri = _triangle(np.vstack([tri, aug]))
    if P == 0:
        raise InputError("path_space: no training inputs")
    R, c, y_perp = tri[:r, :r], tri[:r, r], tri[r, r]
    offset = np.array([P - r, y_perp**2])
    return PathSpace(R.reshape(r, d, n), c, offset)


def path_space(phi, y, block_rows: int = BLOCK_ROWS) -> PathSpace:
    """:class:`PathSpace` of ``Phi`` ``(P, N_0, n_pi)`` and labels ``y`` (eq. (4.10a)), factorised in row blocks."""
    phi, y = np.asarray(phi), np.asarray(y)
    P, d, n = phi.shape
    blocks = ((phi[i : i + block_rows], y[i : i + block_rows]) for i in range(0, P, block_rows))
    return path_space_blocks(blocks, d, n)


#: the last few results of :func:`training_set`, by the identity of their inputs (which each entry holds, so an
#: identity is never reused while cached): a scan solves one training set at many widths and temperatures
_RECENT: list = []
_RECENT_SIZE = 4


def training_set(phi, y, mode: str = "auto"):
    """``(phi_kd, y_kd, offset)``: the training set the kernel functions should see, by the policy
    (:func:`use_path_space`): its path-space points and the offset (eq. (4.10a)), or ``Phi``, ``y`` and ``None``.

    The factorisation of the same ``phi`` and ``y`` objects is reused (the last :data:`_RECENT_SIZE`), so the
    callers of a scan pay it once.
    """
    P, d, n = np.shape(phi)
    if not use_path_space(P, d, n, mode):
        return phi, y, None
    for entry in _RECENT:
        if entry[0] is phi and entry[1] is y:
            return entry[2]
    ps = path_space(phi, y)
    out = (jnp.asarray(ps.phi), jnp.asarray(ps.y), jnp.asarray(ps.offset))
    _RECENT.insert(0, (phi, y, out))
    del _RECENT[_RECENT_SIZE:]
    return out


def energy_offset(offset, T):
    """``E(U) - E_r(U) = (P - r) ln T + |y_perp|^2 / T`` (docs/theory.md eq. (4.10b)): the energy of the full
    training set minus that of its path-space points, the same at every ``U``; ``0`` for ``offset = None``."""
    if offset is None:
        return 0.0
    return offset[0] * jnp.log(T) + offset[1] / T


def log_marginal_offset(offset, T):
    """``ln N(y; 0, K + T I_P) - ln N(c; 0, K_r + T I_r) = -(E offset + (P - r) ln 2 pi) / 2`` (eq. (4.10c))."""
    if offset is None:
        return 0.0
    return -0.5 * (energy_offset(offset, T) + offset[0] * jnp.log(2.0 * jnp.pi))


__all__ = [
    "BLOCK_ROWS",
    "MODES",
    "PathSpace",
    "use_path_space",
    "path_space",
    "path_space_blocks",
    "training_set",
    "energy_offset",
    "log_marginal_offset",
]
