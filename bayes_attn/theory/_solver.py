"""Saddle-point solver of the theory (docs/theory.md §4.4, §4.7; decisions in docs/theory_solver.md).

Method *(project choice)*: **damped Newton on the Cholesky parameters** ``theta``
(``U_l = L_l L_l^T``, ``(L_l)_ii = e^{theta_ii}``), ``U_a`` eliminated by its closed form,
started from the GP value.  Why Newton rather than L-BFGS: the unknowns are few
(``sum_l p_l(p_l+1)/2``: 13 for the Markov task, 146 for ``L=2, H=4``), the energy Hessian has
a cheap closed form (:func:`._equations.energy_derivatives`), the stopping rule (relative
gradient ``<= 1e-9``) is reached in a handful of quadratically convergent steps where a
quasi-Newton method stalls near machine precision, and the Hessian at the solution is needed
anyway for the positive-definiteness check.  Indefinite Hessians (far from the optimum) are
shifted to positive definite; a step is capped at ``MAX_STEP`` in the max-norm of ``theta``
(a trust radius: at most a factor ``e`` on a diagonal Cholesky entry), then backtracked
(Armijo) and a non-finite action rejects it.  *(project choice)* Without the cap the first
steps of the 16-path benchmark (L=2, H=4, P=600) were shifted-Newton steps of length ~1e7 that
needed ~25 halvings each (a development measurement, not stored); the timings with the cap are in
docs/theory_solver.md (benchmarks/theory/results.json).

Convergence measure: ``rel_grad = max_l ||dA/dU_l||_F / (N_l ||U_l^{-1}||_F)`` -- the residual
of the stationarity equations (§4.5) relative to the size ``N_l U_l^{-1}`` of their terms.
Failure (no convergence, non-finite values, non-PD Hessian) is returned in the status and
raised as a :class:`TheoryWarning`; never hidden.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from .._programs import disk_jit
from ..linalg import (
    cholesky_factor,
    energy_derivatives,
    kernel_data,
    pack_cholesky,
    symmetric_to_packed_matrix,
    train_kernel_data,
    tril_size,
    unpack_cholesky,
)
from ..network import Hyper
from ._action import (
    entropy_gradient,
    gp_order_parameters,
    reduced_action,
    reduced_entropy_hessian,
    u_a_closed_form,
)


class TheoryWarning(UserWarning):
    """The saddle-point solver did not reach a trustworthy minimum."""


class SolverStatus(NamedTuple):
    """How a saddle-point solve ended (:func:`solve`): convergence, iterations, the relative gradient norm, the
    action, the smallest eigenvalues of the order parameters and of the Hessian, and a message; :attr:`ok` when
    it converged to a minimum with a positive-definite Hessian."""

    converged: bool
    iterations: int
    grad_norm: float  # relative gradient norm (module docstring)
    action: float  # S_ent + E at the solution
    min_eig_U: tuple  # smallest eigenvalue of U_1..U_L, then U_a
    hessian_min_eig: float  # smallest eigenvalue of the Hessian in packed-U coordinates
    hessian_pd: bool
    message: str

    @property
    def ok(self) -> bool:
        """Converged, with a positive-definite Hessian."""
        return bool(self.converged and self.hessian_pd)


class Solution(NamedTuple):
    """The saddle point found by :func:`solve`: ``U_a``, ``[U_1, ..., U_L]`` and the :class:`SolverStatus`."""

    U_a: jax.Array
    Us: list  # [U_1, ..., U_L]
    status: SolverStatus

    @property
    def U(self):
        """``U_1`` (the path overlap entering the kernel)."""
        return self.Us[0]


def _sizes(hyper) -> list[int]:
    return [hyper.p(l) for l in range(1, hyper.n_layers + 1)]


@disk_jit
def _value(theta, hyper, kd, y):
    return reduced_action(unpack_cholesky(theta, _sizes(hyper)), hyper, kd, y)


def _cholesky_chain(theta, sizes, G):
    """``J = du/dtheta`` (packed ``u``) and ``d^2/dtheta^2 sum_l Tr(G_l U_l(theta))`` for ``U_l = L_l L_l^T``, in
    closed form (block diagonal over the layers).  With ``s_ab = dL_ab/dtheta_ab`` (``exp(theta_aa)`` on the
    diagonal, 1 below it): ``dU/dtheta_ab = s_ab (E_ab L^T + L E_ba)`` and, for a symmetric ``G``,
    ``d^2 Tr(G U) / dtheta_ab dtheta_cd = 2 s_ab s_cd G_ac delta_bd + delta_(ab),(cd) delta_ab 2 s_aa (G L)_aa``
    (checked against automatic differentiation in tests/test_theory_solver.py)."""
    Js, curvs, k = [], [], 0
    for p, Gl in zip(sizes, G):
        t = theta[k : k + tril_size(p)]
        k += tril_size(p)
        L = cholesky_factor(t, p)
        a, b = np.tril_indices(p)  # theta's entries (row-major lower triangle)
        i, j = np.triu_indices(p)  # u's entries (row-major upper triangle)
        s = jnp.where(a == b, jnp.exp(t), 1.0)
        eye = np.eye(p)
        Js.append(s * (eye[i[:, None], a] * L[j[:, None], b] + L[i[:, None], b] * eye[j[:, None], a]))
        same_b = (b[:, None] == b[None, :]).astype(float)
        GL = (Gl @ L)[a, b]
        curvs.append(2.0 * jnp.outer(s, s) * Gl[a[:, None], a[None, :]] * same_b + jnp.diag(2.0 * s * GL * (a == b)))
    return jsl.block_diag(*Js), jsl.block_diag(*curvs)


def _relative_grad(G, Us, hyper):
    rel = [
        jnp.linalg.norm(g) / (hyper.widths[l] * jnp.linalg.norm(jnp.linalg.inv(U)))
        for l, (g, U) in enumerate(zip(G, Us))
    ]
    return jnp.max(jnp.stack(rel))


@disk_jit
def _newton_data(theta, hyper, kd, y):
    """Action, gradient and Hessian in ``theta``; Hessian in packed ``u``; relative gradient."""
    sizes = _sizes(hyper)
    Us = unpack_cholesky(theta, sizes)
    f = reduced_action(Us, hyper, kd, y)
    # gradient in closed form: entropy (eqs. (4.5c), (4.5d), U_a eliminated) + energy (4.5a), U_1 block
    p1 = Us[0].shape[0]
    _, dE, H_E = energy_derivatives(Us[0], kd, y, hyper.temperature)
    G = entropy_gradient(Us, u_a_closed_form(Us[-1], hyper), hyper)
    G[0] = G[0] + dE
    rel = _relative_grad(G, Us, hyper)
    # Hessian w.r.t. packed u, in closed form (no automatic differentiation to compile, docs/design.md
    # "Start-up"): the reduced entropy's and the energy's (4.5b, U_1 block) in vec coordinates, then packed
    H_vec = reduced_entropy_hessian(Us, hyper)
    H_vec = H_vec.at[: p1 * p1, : p1 * p1].add(H_E.reshape(p1 * p1, p1 * p1))
    D = jsl.block_diag(*(symmetric_to_packed_matrix(p) for p in sizes))  # vec U = D u, layer by layer
    H_u = D.T @ H_vec @ D
    g_u = D.T @ jnp.concatenate([g.reshape(-1) for g in G])  # d f / d u
    # chain rule to theta: J^T H_u J + sum_k g_u,k d^2 u_k / dtheta^2
    J, curv = _cholesky_chain(theta, sizes, G)
    H_t = J.T @ H_u @ J + curv
    g_t = J.T @ g_u
    return f, g_t, (H_t + H_t.T) / 2, (H_u + H_u.T) / 2, rel


#: trust radius of one Newton step in the max-norm of the Cholesky parameters ``theta``
MAX_STEP = 1.0

# The steps around the Newton loop run as a few compiled programs rather than op by op, each kept on disk
# (bayes_attn._programs): a fresh process loads four traced programs instead of tracing dozens of single
# operations (the start-up of ``bayes-attn theory``).
_kernel_data = disk_jit(kernel_data)


@disk_jit
def _gp_start(hyper):
    return pack_cholesky(gp_order_parameters(hyper)[1])


_pack = disk_jit(pack_cholesky)


@disk_jit
def _finish(theta, hyper):
    """``[U_1..U_L]``, ``U_a`` and the smallest eigenvalue of each ``U_l`` at the solution ``theta``."""
    Us = unpack_cholesky(theta, _sizes(hyper))
    return Us, u_a_closed_form(Us[-1], hyper), jnp.stack([jnp.linalg.eigvalsh(U)[0] for U in Us])


def _start(hyper, init):
    if init is None:
        return _gp_start(hyper)
    return _pack([jnp.asarray(U, dtype=jnp.float64) for U in init])


def training_kernel_data(phi, y, path_space: str = "auto"):
    """``(kd, y_kd)`` of the training set as the solver sees it: :func:`bayes_attn.linalg.training_set` (its
    path-space points when they are fewer than the inputs, docs/theory.md §4.10) through the compiled kernel
    assembly of this module."""
    kd, y_kd = train_kernel_data(phi, y, path_space, assemble=lambda p: _kernel_data(jnp.asarray(p, dtype=jnp.float64)))
    return kd, y_kd.astype(jnp.float64)


def solve(
    spec,
    phi,
    y,
    *,
    init=None,
    tol: float = 1e-9,
    max_iter: int = 200,
    warn: bool = True,
    path_space: str = "auto",
) -> Solution:
    """Minimise ``S_ent + E`` (theory.md §4.4) over ``U_1..U_L`` (``U_a`` in closed form).

    Parameters
    ----------
    spec : NetworkSpec
        Heads, widths, variances, temperature.
    phi : array, shape (P, N0, n_pi)
        ``Phi`` of the training inputs (``Task.phi("train", spec)``).
    y : array, shape (P,)
        Training labels.
    init : list of arrays, optional
        Starting ``[U_1, ..., U_L]`` (positive definite); default the GP value (§4.6).
    tol : float
        Stop when the relative gradient norm (module docstring) is ``<= tol``.
    max_iter : int
        Largest number of Newton iterations.
    warn : bool
        Emit a :class:`TheoryWarning` when the solve fails (its status says so either way).
    path_space : {"auto", "dense", "path"}
        Work on the ``r = N0 n_pi`` path-space points of the training set (docs/theory.md §4.10): ``"auto"``
        when ``r < P`` (:func:`bayes_attn.linalg.use_path_space`); the same numbers either way.

    Returns
    -------
    Solution
        ``(U_a, Us, status)``.  A failed solve emits :class:`TheoryWarning` (with ``warn``).
    """
    hyper = Hyper.from_spec(spec)
    kd, y = training_kernel_data(phi, y, path_space)
    theta = _start(hyper, init)
    msg, converged, it = "maximum number of iterations reached", False, 0
    f, g, H, H_u, rel = _newton_data(theta, hyper, kd, y)
    for it in range(1, max_iter + 1):
        if not (np.isfinite(float(f)) and np.all(np.isfinite(np.asarray(g)))):
            msg = "non-finite action or gradient"
            break
        if float(rel) <= tol:
            converged, msg, it = True, "converged", it - 1
            break
        w, V = np.linalg.eigh(np.asarray(H))
        shift = max(0.0, -w.min() + 1e-10 * max(abs(w).max(), 1.0))
        step = -(V @ ((V.T @ np.asarray(g)) / (w + shift)))
        step *= min(1.0, MAX_STEP / max(np.abs(step).max(), 1e-300))
        slope, f0, t = float(np.dot(g, step)), float(f), 1.0
        accepted = False
        for _ in range(60):
            f_new = float(_value(theta + t * step, hyper, kd, y))
            if np.isfinite(f_new) and f_new <= f0 + 1e-4 * t * slope + 1e-14 * abs(f0):
                accepted = True
                break
            t *= 0.5
        if not accepted:
            msg = "line search failed"
            break
        theta = theta + t * step
        f, g, H, H_u, rel = _newton_data(theta, hyper, kd, y)
    Us, U_a, eig_U = _finish(theta, hyper)
    h_eig = float(np.linalg.eigvalsh(np.asarray(H_u)).min()) if np.all(np.isfinite(np.asarray(H_u))) else np.nan
    min_eig = tuple(float(e) for e in np.asarray(eig_U)) + (float(U_a),)
    hess_pd = bool(np.isfinite(h_eig) and h_eig > 0)
    if converged and not hess_pd:
        msg = "converged to a stationary point whose Hessian is not positive definite"
    status = SolverStatus(bool(converged), int(it), float(rel), float(f), min_eig, h_eig, hess_pd, msg)
    if warn and not status.ok:
        warnings.warn(
            f"theory solver (width={spec.widths}, T={spec.temperature}): {msg}; "
            f"relative gradient {float(rel):.2e}, Hessian min eigenvalue {h_eig:.2e}",
            TheoryWarning,
            stacklevel=2,
        )
    return Solution(U_a, Us, status)


__all__ = ["solve", "training_kernel_data", "Solution", "SolverStatus", "TheoryWarning"]
