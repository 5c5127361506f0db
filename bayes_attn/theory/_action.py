"""Order parameters and the action of the finite-width theory (docs/theory.md §4.4–§4.5).

Conventions (theory.md §1):

* ``U_a`` is a positive scalar; ``Us = [U_1, ..., U_L]`` with ``U_l`` of shape ``(p_l, p_l)``,
  ``p_l = prod_{k >= l} H_k``, multi-index ``(h_l, ..., h_L)`` with ``h_l`` most significant.
* ``U_{L+1} == U_a`` (handled internally as the ``1 x 1`` matrix ``[[U_a]]``).
* The action is ``S_ent(U) + E(U_1)``, i.e. ``-2 ln(integrand) + const``; the authors'
  ``S_code`` is this divided by ``max_l N_l`` (constant factors do not move the minimiser).

All functions are pure JAX, differentiable, and meant for float64 (``import bayes_attn``
switches JAX to float64).  A matrix that is not positive definite makes the Cholesky
factor NaN, so the entropy (or energy) comes out NaN (resp. ``+inf``) -- never a silent
finite value.
"""

from __future__ import annotations

from typing import Sequence

import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from .. import linalg
from ..linalg import KernelData
from ..network import NetworkSpec


def partial_trace(U_l, H_l: int):
    """``(Tr_{h_l} U_l)_{AB} = sum_h (U_l)_{(h,A),(h,B)}`` (theory.md §1): ``(p_{l+1}, p_{l+1})``."""
    D = U_l.shape[0] // H_l
    return jnp.einsum("gagb->ab", U_l.reshape(H_l, D, H_l, D))


def _chol_logdet(U):
    """Cholesky factor and ``ln det U`` (NaN when ``U`` is not positive definite)."""
    c = jnp.linalg.cholesky(U)
    return c, linalg.log_det_from_cholesky(c)


def entropy(U_a, Us: Sequence, spec: NetworkSpec, factors: Sequence | None = None):
    """Entropy term ``S_ent(U)`` of theory.md §4.4.

    ``S_ent = N_a (U_a/sigma_a^2 - ln U_a)
    + sum_l N_l ( Tr[U_{l+1}^{-1} Tr_{h_l} U_l] / sigma_l^2 - ln det U_l + H_l ln det U_{l+1} )``
    with ``U_{L+1} = U_a``.

    Parameters
    ----------
    U_a : scalar
        Readout order parameter (``> 0``).
    Us : sequence of arrays
        ``[U_1, ..., U_L]``, ``U_l`` of shape ``(p_l, p_l)``, positive definite.
    spec : NetworkSpec
        Supplies ``heads`` ``(H_1..H_L)``, ``widths`` ``(N_1..N_L, N_a)`` and
        ``variances`` ``(sigma_0^2, sigma_1^2..sigma_L^2, sigma_a^2)``.
    factors : sequence of arrays, optional
        The lower Cholesky factors of ``Us`` where the caller holds them (the sampled density builds
        ``U_l = L_l L_l^T``): the same value without factorising again, and a gradient through products only.

    Returns
    -------
    scalar
        NaN if some ``U`` is not positive definite.
    """
    L = spec.n_layers
    if len(Us) != L:
        raise ValueError(f"Us: needs {L} matrices U_1..U_L, got {len(Us)}")
    n_a, s2_a = spec.widths[-1], spec.sigma2_readout
    U_a = jnp.asarray(U_a)
    out = n_a * (U_a / s2_a - jnp.log(U_a))
    c_next = jnp.sqrt(U_a).reshape(1, 1)  # the Cholesky factor of U_{L+1} = U_a
    logdet_next = jnp.log(U_a)
    for l in range(L, 0, -1):  # l = L .. 1 (1-based)
        U_l = Us[l - 1]
        H_l, N_l, s2_l = spec.heads[l - 1], spec.widths[l - 1], spec.sigma2_layers[l - 1]
        tr = jnp.trace(jsl.cho_solve((c_next, True), partial_trace(U_l, H_l)))
        if factors is None:
            c_l, logdet_l = _chol_logdet(U_l)
        else:
            c_l = factors[l - 1]
            logdet_l = linalg.log_det_from_cholesky(c_l)
        out = out + N_l * (tr / s2_l - logdet_l + H_l * logdet_next)
        c_next, logdet_next = c_l, logdet_l
    return out


def entropy_gradient(Us: Sequence, U_a, spec: NetworkSpec) -> list:
    """``dS_ent/dU_l`` for ``l = 1..L`` at fixed ``U_a`` (entries taken as independent): the entropy parts of the
    stationarity equations (docs/theory.md eqs. (4.5c), (4.5d)),

    ``N_l [ (I_{H_l} (x) U_{l+1}^{-1}) / sigma_l^2 - U_l^{-1} ]
    + N_{l-1} [ H_{l-1} U_l^{-1} - U_l^{-1} (Tr_{h_{l-1}} U_{l-1}) U_l^{-1} / sigma_{l-1}^2 ]`` (second bracket for
    ``l >= 2``), with ``U_{L+1} = U_a``.  At ``U_a = u_a_closed_form(U_L)``, where ``dS_ent/dU_a = 0``, it is the
    gradient of the reduced entropy (the envelope theorem, as in :func:`reduced_action`), the solver's gradient
    together with the energy's (checked against autodiff in tests/test_theory_action.py and
    tests/test_theory_solver.py).
    """
    inv = [jnp.linalg.inv(U) for U in Us]
    inv_next = [*inv[1:], (1.0 / jnp.asarray(U_a)).reshape(1, 1)]
    out = []
    for l in range(len(Us)):  # 0-based: layer l + 1
        H, N, s2 = spec.heads[l], spec.widths[l], spec.sigma2_layers[l]
        g = N * (jnp.kron(jnp.eye(H), inv_next[l]) / s2 - inv[l])
        if l > 0:
            H_prev, N_prev, s2_prev = spec.heads[l - 1], spec.widths[l - 1], spec.sigma2_layers[l - 1]
            A = partial_trace(Us[l - 1], H_prev)
            g = g + N_prev * (H_prev * inv[l] - inv[l] @ A @ inv[l] / s2_prev)
        out.append(g)
    return out


def reduced_entropy_hessian(Us: Sequence, spec: NetworkSpec):
    """Hessian of the reduced entropy ``S_ent(U_1..U_L, U_a(U_L))`` in the entries of ``vec U_1, ..., vec U_L``
    (row-major, entries independent): ``(sum_l p_l^2, sum_l p_l^2)``, in closed form.

    With ``U_{L+1} = U_a`` treated as a ``1 x 1`` block, the second derivatives of the terms of :func:`entropy` are
    (``B = U_l``, ``A = U_{l+1}``, ``M = Tr_{h_l} B``, ``c = N_l / sigma_l^2``):
    ``d^2 (-N_l ln det B) / dB_ij dB_kl = N_l B^-1_jk B^-1_li``;
    ``d^2 (N_l H_l ln det A) / dA_ij dA_kl = -N_l H_l A^-1_jk A^-1_li``;
    ``d^2 (c Tr A^-1 M) / dA_ij dA_kl = c (A^-1_jk (A^-1 M A^-1)_li + (A^-1 M A^-1)_jk A^-1_li)``;
    ``d^2 (c Tr A^-1 M) / dA_ij dB_(h,a),(h',b) = -c delta_hh' A^-1_bi A^-1_ja``; and ``N_a / U_a^2`` for the
    readout term.  ``U_a`` is then eliminated at its closed form (:func:`u_a_closed_form`), where
    ``dS_ent/dU_a = 0``: the reduced Hessian is the Schur complement ``S_UU - S_Ua S_aU / S_aa``.  Checked against
    automatic differentiation in tests/test_theory_action.py.
    """
    L = len(Us)
    U_a = u_a_closed_form(Us[-1], spec)
    mats = [*Us, jnp.reshape(U_a, (1, 1))]  # blocks 0..L-1 and the readout block L
    inv = [jnp.linalg.inv(U) for U in mats]
    sizes = [U.shape[0] for U in mats]
    offs = np.concatenate([[0], np.cumsum([p * p for p in sizes])])
    H = jnp.zeros((int(offs[-1]), int(offs[-1])))

    def outer(X, Y):  # K[(i, j), (k, l)] = X_jk Y_li
        p = X.shape[0]
        return jnp.einsum("jk,li->ijkl", X, Y).reshape(p * p, p * p)

    def add(H, a, b, block):
        return H.at[offs[a] : offs[a + 1], offs[b] : offs[b + 1]].add(block)

    n_a = spec.widths[-1]
    H = add(H, L, L, jnp.reshape(n_a / U_a**2, (1, 1)))
    for l in range(L):  # 0-based layer l; B = U_l, A = the next block
        Hl, N, s2 = spec.heads[l], spec.widths[l], spec.sigma2_layers[l]
        B_inv, A_inv = inv[l], inv[l + 1]
        c = N / s2
        H = add(H, l, l, N * outer(B_inv, B_inv))
        AMA = A_inv @ partial_trace(mats[l], Hl) @ A_inv
        H = add(H, l + 1, l + 1, c * (outer(A_inv, AMA) + outer(AMA, A_inv)) - N * Hl * outer(A_inv, A_inv))
        q, pb = sizes[l + 1], sizes[l]
        # cross block d^2 / dA_ij dB_(h,a),(h',b) = -c delta_hh' A^-1_bi A^-1_ja
        cross = -c * jnp.einsum("hg,bi,ja->ijhagb", jnp.eye(Hl), A_inv, A_inv).reshape(q * q, pb * pb)
        H = add(H, l + 1, l, cross)
        H = add(H, l, l + 1, cross.T)
    n = int(offs[L])
    S_UU, S_Ua, S_aa = H[:n, :n], H[:n, n:], H[n:, n:]
    return S_UU - S_Ua @ S_Ua.T / S_aa[0, 0]


def energy(U_1, kd: KernelData, y, T):
    """Energy term ``E(U_1) = ln det(K_U + T I) + y^T (K_U + T I)^{-1} y`` (docs/theory.md eq. (4.4a)).

    ``kd``, ``y``: the training set as :func:`bayes_attn.linalg.train_kernel_data` gives it (its path-space points
    and their offset when they are fewer, eq. (4.10b)); ``+inf`` when ``K_U + T I`` is not positive definite
    (:func:`bayes_attn.linalg.kernel_energy`).
    """
    return linalg.kernel_energy(kd, U_1, jnp.asarray(y), T)


def u_a_closed_form(U_L, spec: NetworkSpec):
    """Minimiser of the action over ``U_a`` given ``U_L`` (theory.md §4.5).

    ``U_a = (-b + sqrt(b^2 + 4c)) / 2``, ``b = sigma_a^2 (H_L N_L / N_a - 1)``,
    ``c = N_L sigma_a^2 Tr U_L / (N_a sigma_L^2)``: the positive root of
    ``N_a (1/sigma_a^2 - 1/U_a) - N_L Tr U_L / (U_a^2 sigma_L^2) + N_L H_L / U_a = 0``.
    """
    n_L, n_a = spec.widths[-2], spec.widths[-1]
    H_L = spec.heads[-1]
    s2_a, s2_L = spec.sigma2_readout, spec.sigma2_layers[-1]
    b = s2_a * (H_L * n_L / n_a - 1.0)
    c = n_L * s2_a * jnp.trace(U_L) / (n_a * s2_L)
    return 0.5 * (-b + jnp.sqrt(b * b + 4.0 * c))


def action(U_a, Us: Sequence, spec: NetworkSpec, kd: KernelData, y):
    """Total action ``S_ent(U) + E(U_1)`` at temperature ``spec.temperature`` (docs/theory.md eq. (4.4c)).

    Arguments as in :func:`entropy` and :func:`energy`.
    """
    return entropy(U_a, Us, spec) + energy(Us[0], kd, y, spec.temperature)


def reduced_action(Us: Sequence, spec: NetworkSpec, kd: KernelData, y):
    """Action with ``U_a`` eliminated by :func:`u_a_closed_form` (what the solver minimises).

    By the envelope theorem its gradient w.r.t. ``U_l`` equals the partial gradient of
    :func:`action` at ``U_a = u_a_closed_form(U_L)`` (theory.md §4.5).
    """
    return action(u_a_closed_form(Us[-1], spec), Us, spec, kd, y)


def gp_order_parameters(spec: NetworkSpec):
    """No-data / GP point (theory.md §4.6): ``U_a = sigma_a^2``, ``U_l = s_l I``, ``s_l = sigma_l^2 s_{l+1}``."""
    s = spec.sigma2_readout
    U_a = jnp.asarray(s)
    Us = []
    for l in range(spec.n_layers, 0, -1):
        s = s * spec.sigma2_layers[l - 1]
        Us.append(s * jnp.eye(spec.p(l)))
    return U_a, Us[::-1]


def load(spec: NetworkSpec, n_train: int):
    """``alpha = P / N_1`` (theory.md §1; all experiments have equal widths)."""
    return n_train / spec.widths[0]


__all__ = [
    "partial_trace",
    "entropy",
    "entropy_gradient",
    "reduced_entropy_hessian",
    "energy",
    "u_a_closed_form",
    "action",
    "reduced_action",
    "gp_order_parameters",
    "load",
]
