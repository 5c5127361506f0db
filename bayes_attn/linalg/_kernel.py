"""Kernels linear in a matrix parameter and the derivatives of the energy (docs/theory.md §4.1–§4.5).

With ``Phi_a`` ``(P_a, D, n)`` and ``Phi_b`` ``(P_b, D, n)`` (for the network: ``D = N_0`` token
features, ``n = n_pi`` paths), the kernel

    K_U[m, k] = sum_{i, p, q} Phi_a[m, i, p] U[p, q] Phi_b[k, i, q]          (docs/theory.md eq. (4.2a))

is linear in ``U``.  It can be evaluated two ways, with the same result:

* **blocks**: precompute ``B[p, q, m, k] = Phi_a[m, :, p] . Phi_b[k, :, q]`` once (memory
  ``n^2 P_a P_b``), then ``K_U = sum_pq U_pq B_pq`` costs ``n^2 P_a P_b``;
* **contract**: ``K_U = (Phi_a U) . Phi_b`` on every call, costing ``P_a D n^2 + P_a P_b D n`` with
  memory ``O(P D n)``.

**The assembly policy** *(project choice)*, one rule for every caller (:func:`use_blocks`):
precompute the blocks when they hold at most ``max_floats = 2e7`` numbers **and** ``n <= D`` (then
an evaluation from the blocks is the cheaper of the two; for the hidden-Markov task, ``n = 4``,
``D = 231``, every kernel is precomputed; for the 16-path digits task, ``n = D = 16``, ``P = 600``,
the blocks would hold ``9.2e7`` numbers and ``Phi`` is contracted).

:class:`KernelData` carries ``Phi_a``, ``Phi_b`` and, when the policy says so, the blocks, as a JAX
pytree: it is passed to compiled functions as a traced argument, so one compiled program serves
every data set of the same shapes.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jax.custom_derivatives import SymbolicZero

from ._cholesky import log_det_from_cholesky
from ._gp import energy, gaussian_log_marginal, shifted_cholesky
from ._pathspace import energy_offset, log_marginal_offset, training_set

#: largest number of floats the precomputed blocks may hold (160 MB in float64)
MAX_FLOATS = 2e7


def path_kernel_blocks(phi_a, phi_b):
    """``B[p, q, m, k] = Phi_a[m, :, p] . Phi_b[k, :, q]`` (docs/theory.md eq. (4.1c), ``C = n B``)."""
    return jnp.einsum("mip,kiq->pqmk", phi_a, phi_b)


def kernel_matrix(phi_a, phi_b, U):
    """``K_U`` by contracting ``Phi`` (docs/theory.md eq. (4.2a)), memory ``O(P D n + P_a P_b)``."""
    return jnp.einsum("miq,niq->mn", jnp.einsum("mip,pq->miq", phi_a, U), phi_b)


def kernel_diag(phi, U):
    """Diagonal ``K_U(x, x)`` for every row of ``phi`` (docs/theory.md eq. (4.2a))."""
    return jnp.einsum("mip,pq,miq->m", phi, U, phi)


def use_blocks(P_a: int, P_b: int, d: int, n: int, max_floats: float = MAX_FLOATS) -> bool:
    """The assembly policy (module docstring): precompute iff the blocks fit and ``n <= d``."""
    return n * n * P_a * P_b <= max_floats and n <= d


class KernelData(NamedTuple):
    """Everything :func:`apply_kernel` needs: ``phi_a``, ``phi_b`` and the blocks (or ``None``).

    ``offset``: ``None``, or the two numbers of :class:`~._pathspace.PathSpace` when ``phi_a`` holds the
    path-space points of a larger training set (:func:`train_kernel_data`): the energies and marginal
    likelihoods below then add the constant that makes them those of the full set (docs/theory.md eq. (4.10b)).
    """

    phi_a: jnp.ndarray
    phi_b: jnp.ndarray
    blocks: jnp.ndarray | None
    offset: jnp.ndarray | None = None


def kernel_data(phi_a, phi_b=None, max_floats: float = MAX_FLOATS) -> KernelData:
    """:class:`KernelData` for ``K_U(x_a, x_b)`` (``phi_b = phi_a`` by default), blocks per :func:`use_blocks`."""
    phi_a = jnp.asarray(phi_a)
    phi_b = phi_a if phi_b is None else jnp.asarray(phi_b)
    P_a, d, n = phi_a.shape
    blocks = path_kernel_blocks(phi_a, phi_b) if use_blocks(P_a, phi_b.shape[0], d, n, max_floats) else None
    return KernelData(phi_a, phi_b, blocks)


def train_kernel_data(phi, y, mode: str = "auto", max_floats: float = MAX_FLOATS, assemble=None):
    """``(kd, y_kd)``: train/train :class:`KernelData` and the labels that go with it, in path space when
    :func:`~._pathspace.use_path_space` says so (``mode``: ``"auto" | "dense" | "path"``), else ``Phi`` and ``y``
    as given (docs/theory.md §4.10).  Every function of this module that takes ``kd`` and ``y_kd`` then gives the
    full training set's numbers.  ``assemble``: what builds the :class:`KernelData` of the points (default
    :func:`kernel_data` with ``max_floats``; the solver passes its compiled copy)."""
    phi_kd, y_kd, offset = training_set(phi, y, mode)
    kd = kernel_data(phi_kd, max_floats=max_floats) if assemble is None else assemble(phi_kd)
    return kd._replace(offset=offset), jnp.asarray(y_kd)


def kernel_energy(kd: KernelData, U, y, T):
    """``E(U) = ln det(K_U + T I) + y^T (K_U + T I)^-1 y`` (docs/theory.md eqs. (4.4a), (4.10b)) from train/train
    kernel data; ``+inf`` where ``K_U + T I`` is not PD.

    Differentiable to any order; its derivative in ``U`` is the feature form of (4.5a) (:func:`_energy_in_u`,
    docs/theory.md eq. (4.5h)), one Cholesky factorisation and one triangular solve.
    """
    return _energy_in_u(U, kd, jnp.asarray(y), T) + energy_offset(kd.offset, T)


def _energy_and_gradient(U, kd: KernelData, y, T):
    """``(E, dE/dU, ok)`` without the offset: eq. (4.5a) in the feature form (4.5h).

    With ``L L^T = K_U + T I``, ``Y = L^-1 Phi`` (``P x D n``, one triangular solve) and ``v = Phi^T G y``:
    ``dE/dU_pq = sum_i (Y^T Y)[i p, i q] - v_ip v_iq``, only the ``n^2`` diagonal-in-``i`` sums of ``Y^T Y``, never
    ``G = (K_U + T I)^-1`` itself.  ``ok`` is false where the factor is not finite (``K_U + T I`` not PD).

    *(Project choice, by cost)*: with the blocks at hand and fewer inputs than feature columns (``P < D n``, the
    dense route of a small training set) the solve against ``D n`` columns costs more than ``G`` and one pass over
    the blocks, so (4.5a) is used as written there; path space (``P = D n``) and larger sets take the feature form.
    """
    phi = kd.phi_a
    P, d, n = phi.shape
    c, ok = shifted_cholesky(apply_kernel(kd, U), T)
    a = jsl.solve_triangular(c, y, lower=True)
    E = log_det_from_cholesky(c) + a @ a
    if kd.blocks is not None and P < d * n:
        # fewer inputs than feature columns: G itself (P^3) and one pass over the blocks (n^2 P^2) cost less than
        # the solve against the D n columns (P^2 D n); eq. (4.5a) as written, dE/dU_pq = <G - r r^T, B_pq>
        L_inv = jsl.solve_triangular(c, jnp.eye(P, dtype=c.dtype), lower=True)
        r = L_inv.T @ a
        return E, jnp.einsum("mk,pqmk->pq", L_inv.T @ L_inv - jnp.outer(r, r), kd.blocks), ok
    Y = jsl.solve_triangular(c, phi.reshape(P, d * n), lower=True).reshape(P, d, n)
    v = jnp.einsum("mip,m->ip", Y, a)  # Phi^T G y = Y^T (L^-1 y)
    g = jnp.einsum("mip,miq->pq", Y, Y) - v.T @ v
    return E, g, ok


def _plain_energy(U, kd: KernelData, y, T):
    """``E(U)`` of :func:`kernel_energy` without the offset, by the P x P route (:func:`~._gp.energy`)."""
    return energy(apply_kernel(kd, U), y, T)


#: :func:`_plain_energy` with :func:`_energy_and_gradient` as its derivative in ``U``
_energy_in_u = jax.custom_jvp(_plain_energy)


def _is_zero(t) -> bool:
    return isinstance(t, SymbolicZero)


def _energy_in_u_jvp(primals, tangents):
    """Tangent ``sum_pq dE/dU_pq dU_pq`` (eq. (4.5h)); ``E = +inf`` and a zero gradient where not PD.  A tangent in
    ``kd``, ``y`` or ``T`` (none of the samplers has one) falls back to the derivative of the P x P route."""
    U, kd, y, T = primals
    dU, dkd, dy, dT = tangents
    if not all(_is_zero(t) for t in jax.tree.leaves((dkd, dy, dT), is_leaf=_is_zero)):
        dense = [
            jnp.zeros(t.aval.shape, t.aval.dtype) if _is_zero(t) else t
            for t in jax.tree.leaves(tangents, is_leaf=_is_zero)
        ]
        return jax.jvp(
            _plain_energy, primals, jax.tree.unflatten(jax.tree.structure(tangents, is_leaf=_is_zero), dense)
        )
    E, g, ok = _energy_and_gradient(U, kd, y, T)
    E = jnp.where(ok, E, jnp.inf)
    if _is_zero(dU):
        return E, jnp.zeros_like(E)
    return E, jnp.sum(jnp.where(ok, g, 0.0) * dU)


_energy_in_u.defjvp(_energy_in_u_jvp, symbolic_zeros=True)


def kernel_log_marginal(kd: KernelData, U, y, T):
    """``ln N(y; 0, K_U + T I)`` (docs/theory.md eqs. (5.1a), (4.10c)) from kernel data; ``-inf`` if not PD."""
    return gaussian_log_marginal(apply_kernel(kd, U), y, T) + log_marginal_offset(kd.offset, T)


def apply_kernel(kd: KernelData, U):
    """``K_U`` from :class:`KernelData` (the same number both ways, docs/theory.md eq. (4.2a))."""
    if kd.blocks is not None:
        return jnp.einsum("pq,pqmn->mn", U, kd.blocks)
    return kernel_matrix(kd.phi_a, kd.phi_b, U)


def energy_gradient(U, kd: KernelData, y, T):
    """``dE/dU = Tr(Phi_p^T G Phi_q) - (Phi_p^T r) . (Phi_q^T r)`` (docs/theory.md eq. (4.5a)).

    ``G = (K_U + T I)^-1``, ``r = G y``; entries of ``U`` taken as independent.  Train/train
    kernel data only (``phi_a`` is ``phi_b``).  Computed in the feature form (4.5h) (:func:`_energy_and_gradient`).
    """
    return _energy_and_gradient(U, kd, y, T)[1]


def energy_derivatives(U, kd: KernelData, y, T):
    """``(E, dE/dU, d^2E/dU^2)``; the Hessian ``H[p, r, s, t]`` (docs/theory.md eq. (4.5b); checked against autodiff).

    With ``dK = B_st``, ``dG = -G dK G`` and ``dr = -G dK r``:
    ``H = -Tr(G B_st G B_pr) + r^T B_st^T G B_pr r + r^T B_pr G B_st r``.

    Two exact contractions, chosen by cost: from the blocks (time ``O(n^2 P^3)``), used when
    :class:`KernelData` holds them and ``P <= D``; otherwise the feature form through
    ``M = Phi^T G Phi`` (memory ``O((D n)^2)``, time ``O(P (D n)^2 + D^2 n^4)``), where
    ``H = -sum_ij M[i p, j s] M[j t, i r] + sum_ij M[i p, j s] v[i r] v[j t] + sum_ij M[i r, j s] v[i p] v[j t]``
    with ``v[i, p] = Phi_{.ip} . r``.
    """
    phi = kd.phi_a
    P, d, n = phi.shape
    if kd.blocks is not None and P <= d:
        B = kd.blocks  # (n, n, P, P)
        K = jnp.einsum("pq,pqmn->mn", U, B)
        c, _ = shifted_cholesky(K, T)
        r = jsl.cho_solve((c, True), y)
        E = log_det_from_cholesky(c) + y @ r + energy_offset(kd.offset, T)
        GB = jsl.cho_solve((c, True), B.transpose(2, 0, 1, 3).reshape(P, n * n * P))
        GB = GB.reshape(P, n, n, P).transpose(1, 2, 0, 3)  # G B_{pr}
        b = jnp.einsum("pqmn,n->pqm", B, r)  # B_pr r
        cvec = jnp.einsum("pqmn,m->pqn", B, r)  # B_pr^T r
        g = jnp.einsum("pqmm->pq", GB) - jnp.einsum("pqm,m->pq", b, r)
        Gbv = jnp.einsum("prab,b->pra", GB, r)
        H = (
            -jnp.einsum("stab,prba->prst", GB, GB)
            + jnp.einsum("sta,pra->prst", b, Gbv)
            + jnp.einsum("pra,sta->prst", cvec, Gbv)
        )
        return E, g, H
    c, _ = shifted_cholesky(apply_kernel(kd, U), T)
    r = jsl.cho_solve((c, True), y)
    E = log_det_from_cholesky(c) + y @ r + energy_offset(kd.offset, T)
    flat = phi.reshape(P, d * n)
    M = (flat.T @ jsl.cho_solve((c, True), flat)).reshape(d, n, d, n)
    v = jnp.einsum("mip,m->ip", phi, r)
    g = jnp.einsum("ipiq->pq", M) - v.T @ v
    Mv = jnp.einsum("ipjs,jt->ipst", M, v)
    X = M.transpose(1, 3, 0, 2).reshape(n * n, d * d)  # [p s, i j]
    Z = M.transpose(3, 1, 2, 0).reshape(n * n, d * d)  # [r t, i j]
    H = (
        -(X @ Z.T).reshape(n, n, n, n).transpose(0, 2, 1, 3)
        + jnp.einsum("ipst,ir->prst", Mv, v)
        + jnp.einsum("irst,ip->prst", Mv, v)
    )
    return E, g, H


__all__ = [
    "MAX_FLOATS",
    "KernelData",
    "kernel_data",
    "train_kernel_data",
    "kernel_energy",
    "kernel_log_marginal",
    "use_blocks",
    "apply_kernel",
    "kernel_matrix",
    "kernel_diag",
    "path_kernel_blocks",
    "energy_gradient",
    "energy_derivatives",
]
