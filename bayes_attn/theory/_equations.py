"""Analytic saddle-point equations of the theory (docs/theory.md §4.5).

These are the closed-form derivatives of the action of :mod:`._action`; they are used

* by the solver for the Newton curvature (the energy Hessian below, much cheaper than
  autodiff for many paths), and
* by the independent reference solver (:mod:`._reference`) for its fixed-point updates,

and are tested against ``jax.grad`` and finite differences.

Notation: ``Phi`` ``(P, N0, n_pi)`` (theory.md §4.1); ``G = (K + T I)^{-1}``, ``r = G y``;
``M[i,pi,j,rho] = Phi_{.i pi}^T G Phi_{.j rho}`` (memory ``(N0 n_pi)^2``) and
``v[i,pi] = Phi_{.i pi} . r``.
"""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg as jsl

from ..network import path_kernel_blocks, renormalized_kernel
from ._action import partial_trace


def _resolvent_terms(U_1, phi, y, T):
    P, n0, n = phi.shape
    K = renormalized_kernel(phi, phi, U_1)
    c = jnp.linalg.cholesky(K + T * jnp.eye(P, dtype=K.dtype))
    r = jsl.cho_solve((c, True), y)
    E = 2.0 * jnp.sum(jnp.log(jnp.diagonal(c))) + y @ r
    flat = phi.reshape(P, n0 * n)
    M = (flat.T @ jsl.cho_solve((c, True), flat)).reshape(n0, n, n0, n)
    v = jnp.einsum("mip,m->ip", phi, r)
    return E, M, v


def energy_gradient(U_1, phi, y, T):
    """``dE/dU_1 = Tr(Phi_pi^T G Phi_pi') - (Phi_pi^T r).(Phi_pi'^T r)`` (theory.md §4.5).

    Gradient w.r.t. the entries of ``U_1`` taken as independent (a symmetric matrix).
    """
    P, n0, n = phi.shape
    K = renormalized_kernel(phi, phi, U_1)
    c = jnp.linalg.cholesky(K + T * jnp.eye(P, dtype=K.dtype))
    r = jsl.cho_solve((c, True), y)
    G_phi = jsl.cho_solve((c, True), phi.reshape(P, n0 * n)).reshape(P, n0, n)
    v = jnp.einsum("mip,m->ip", phi, r)
    return jnp.einsum("mip,miq->pq", phi, G_phi) - v.T @ v


def kernel_data(phi, max_floats: float = 2e7):
    """What the energy needs of the training inputs: the path blocks ``B`` ``(n, n, P, P)``
    when ``P <= N0`` and they hold at most ``max_floats`` numbers (cheaper), else ``Phi`` itself."""
    P, n0, n = phi.shape
    if P <= n0 and n * n * P * P <= max_floats:
        return path_kernel_blocks(phi, phi)
    return phi


def kernel_of(data):
    """``U -> K_U`` on the training inputs from :func:`kernel_data` output."""
    if data.ndim == 4:
        return lambda U: jnp.einsum("pq,pqmn->mn", U, data)
    return lambda U: renormalized_kernel(data, data, U)


def energy_derivatives(U_1, data, y, T):
    """``(E, dE/dU_1, d^2E/dU_1^2)`` with the Hessian ``H[pi,rho,sigma,tau]`` (derived here).

    With ``dK = B_{sigma tau}`` (``B_{pi rho} = sum_i Phi_{.i pi} Phi_{.i rho}^T``), ``dG = -G dK G``
    and ``dr = -G dK r``:
    ``H = -Tr(G B_st G B_pr) + r^T B_st^T G B_pr r + r^T B_pr G B_st r``
    (entries of ``U_1`` independent; *derived, checked against autodiff in the tests*).

    ``data`` comes from :func:`kernel_data`.  Two exact contractions, chosen by cost: the ``P x P`` path blocks
    (memory ``O(n_pi^2 P^2)``, time ``O(n_pi^2 P^3)``); otherwise the feature form through
    ``M = Phi^T G Phi`` (memory ``O((N0 n_pi)^2)``, time ``O(P (N0 n_pi)^2 + N0^2 n_pi^4)``), where
    ``H = -sum_ij M[i pi, j sigma] M[j tau, i rho] + sum_ij M[i pi, j sigma] v[i rho] v[j tau]
    + sum_ij M[i rho, j sigma] v[i pi] v[j tau]``.
    """
    if data.ndim == 4:
        B = data  # (n, n, P, P)
        n, P = B.shape[0], B.shape[2]
        K = jnp.einsum("pq,pqmn->mn", U_1, B)
        c = jnp.linalg.cholesky(K + T * jnp.eye(P, dtype=K.dtype))
        r = jsl.cho_solve((c, True), y)
        E = 2.0 * jnp.sum(jnp.log(jnp.diagonal(c))) + y @ r
        GB = jsl.cho_solve((c, True), B.transpose(2, 0, 1, 3).reshape(P, n * n * P))
        GB = GB.reshape(P, n, n, P).transpose(1, 2, 0, 3)  # G B_{pi rho}
        b = jnp.einsum("pqmn,n->pqm", B, r)  # B_pr r
        cvec = jnp.einsum("pqmn,m->pqn", B, r)  # B_pr^T r
        g = jnp.einsum("pqmm->pq", GB) - jnp.einsum("pqm,m->pq", b, r)
        # r^T B_st^T G B_pr r = b_st . (G b_pr);  r^T B_pr G B_st r = cvec_pr . (G b_st)
        Gbv = jnp.einsum("prab,b->pra", GB, r)
        H = (-jnp.einsum("stab,prba->prst", GB, GB)
             + jnp.einsum("sta,pra->prst", b, Gbv)
             + jnp.einsum("pra,sta->prst", cvec, Gbv))
        return E, g, H
    phi = data
    P, n0, n = phi.shape
    E, M, v = _resolvent_terms(U_1, phi, y, T)
    g = jnp.einsum("ipiq->pq", M) - v.T @ v
    Mv = jnp.einsum("ipjs,jt->ipst", M, v)
    X = M.transpose(1, 3, 0, 2).reshape(n * n, n0 * n0)  # [pi sigma, i j]
    Z = M.transpose(3, 1, 2, 0).reshape(n * n, n0 * n0)  # [rho tau, i j]
    H = (-(X @ Z.T).reshape(n, n, n, n).transpose(0, 2, 1, 3)
         + jnp.einsum("ipst,ir->prst", Mv, v)
         + jnp.einsum("irst,ip->prst", Mv, v))
    return E, g, H


def u1_fixed_point(U_next, grad_E, spec):
    """Right-hand side of the ``U_1`` stationarity equation (theory.md §4.5).

    ``U_1 = [ (I_{H_1} (x) U_2^{-1}) / sigma_1^2 + (1/N_1) dE/dU_1 ]^{-1}``; ``U_next`` is
    ``U_2`` (``L >= 2``) or the scalar ``U_a`` (``L = 1``).
    """
    U_next = jnp.atleast_2d(U_next)
    H1, N1, s2 = spec.heads[0], spec.widths[0], spec.sigma2_layers[0]
    A = jnp.kron(jnp.eye(H1), jnp.linalg.inv(U_next)) / s2 + grad_E / N1
    return jnp.linalg.inv(A)


def u_l_root(U_prev, U_next, l: int, spec):
    """Exact solution of the ``U_l`` stationarity equation for ``2 <= l <= L`` (theory.md §4.5).

    The equation ``N_l[(I (x) U_{l+1}^{-1})/sigma_l^2 - X] + N_{l-1}[H_{l-1} X - X A X/sigma_{l-1}^2] = 0``
    with ``X = U_l^{-1}`` and ``A = Tr_{h_{l-1}} U_{l-1}`` is, for ``X = A^{-1/2} Y A^{-1/2}``,
    ``a Y^2 + c Y = A^{1/2} D A^{1/2}`` with ``a = N_{l-1}/sigma_{l-1}^2``, ``c = N_l - N_{l-1} H_{l-1}``,
    ``D = N_l (I (x) U_{l+1}^{-1})/sigma_l^2``; its unique positive-definite root is
    ``Y = (-c + sqrt(c^2 + 4 a E)) / (2a)`` in the eigenbasis of ``E = A^{1/2} D A^{1/2}``
    (*derived here*; the residual is checked in the tests).  Returns ``U_l = X^{-1}``.
    """
    U_next = jnp.atleast_2d(U_next)
    H_prev, H_l = spec.heads[l - 2], spec.heads[l - 1]
    N_prev, N_l = spec.widths[l - 2], spec.widths[l - 1]
    s2_prev, s2_l = spec.sigma2_layers[l - 2], spec.sigma2_layers[l - 1]
    A = partial_trace(U_prev, H_prev)
    D = N_l * jnp.kron(jnp.eye(H_l), jnp.linalg.inv(U_next)) / s2_l
    w, V = jnp.linalg.eigh(A)
    Ah = (V * jnp.sqrt(w)) @ V.T
    Aih = (V / jnp.sqrt(w)) @ V.T
    a, c = N_prev / s2_prev, N_l - N_prev * H_prev
    e, Q = jnp.linalg.eigh(Ah @ D @ Ah)
    y = (-c + jnp.sqrt(c * c + 4.0 * a * e)) / (2.0 * a)
    X = Aih @ ((Q * y) @ Q.T) @ Aih
    return jnp.linalg.inv((X + X.T) / 2)


__all__ = ["kernel_data", "kernel_of", "energy_gradient", "energy_derivatives", "u1_fixed_point", "u_l_root"]
