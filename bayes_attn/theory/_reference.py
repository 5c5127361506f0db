"""Independent reference solution of the saddle-point equations (docs/theory.md §4.5, §4.7).

Block-coordinate iteration on the *analytic* stationarity equations, sharing nothing with the
Newton solver except the action's definition of the problem:

* ``U_1^{-1} <- (1 - d) U_1^{-1} + d B``, ``B = (I (x) U_2^{-1})/sigma_1^2 + (1/N_1) dE/dU_1`` (damped
  fixed point of the §4.5 ``U_1`` equation, in the inverse; ``d`` is cut to
  ``0.5 / (1 - lambda_min)`` when ``B`` has whitened eigenvalues ``lambda_min < 0``, which keeps
  ``U_1`` positive definite);
* ``U_l``, ``2 <= l <= L``: the exact positive-definite root of its quadratic equation
  (:func:`._equations.u_l_root`);
* ``U_a``: closed form.

The damping starts at ``damping`` and is halved whenever the relative change of ``U_1`` grows
(at large load ``alpha`` the undamped map overshoots into a 2-cycle).  It converges linearly
(slowly at large ``alpha``) and is meant for validation only.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..linalg import energy_gradient, train_kernel_data
from ..network import Hyper
from ._action import gp_order_parameters, u_a_closed_form
from ._equations import u1_fixed_point, u_l_root


class ReferenceResult(NamedTuple):
    """The fixed point of :func:`reference_solve`: ``U_a``, ``[U_1, ..., U_L]``, the iterations and the last
    relative change of ``U_1``."""

    U_a: jax.Array
    Us: list
    iterations: int
    change: float  # last relative change of U_1 (Frobenius)


def _sweep(Us, U_a, hyper, kd, y, damping):
    L = hyper.n_layers
    Us = list(Us)
    g_E = energy_gradient(Us[0], kd, y, hyper.temperature)
    B = jnp.linalg.inv(u1_fixed_point(Us[1] if L >= 2 else U_a, g_E, hyper))
    w, V = jnp.linalg.eigh(Us[0])
    half = (V * jnp.sqrt(w)) @ V.T
    lam = jnp.linalg.eigvalsh(half @ B @ half)[0]
    d = jnp.where(lam < 0, jnp.minimum(damping, 0.5 / (1.0 - lam)), damping)
    inv = (1.0 - d) * jnp.linalg.inv(Us[0]) + d * (B + B.T) / 2
    new = jnp.linalg.inv(inv)
    Us[0] = (new + new.T) / 2
    for l in range(2, L + 1):
        Us[l - 1] = u_l_root(Us[l - 2], Us[l] if l < L else U_a, l, hyper)
    return Us, u_a_closed_form(Us[-1], hyper)


def reference_solve(
    spec, phi, y, *, damping: float = 0.5, tol: float = 1e-13, max_iter: int = 200_000, path_space: str = "auto"
) -> ReferenceResult:
    """Iterate the block updates from the GP value until the relative change of ``U_1`` is ``<= tol``.

    ``path_space``: the policy of :func:`bayes_attn.linalg.use_path_space` (``"auto" | "dense" | "path"``)."""
    hyper = Hyper.from_spec(spec)
    kd, y = train_kernel_data(np.asarray(phi, dtype=np.float64), np.asarray(y, dtype=np.float64), path_space)
    U_a, Us = gp_order_parameters(spec)
    U_a = u_a_closed_form(Us[-1], spec)

    @jax.jit
    def run(Us, U_a):
        def cond(c):
            return (c[2] < max_iter) & (c[3] > tol)

        def body(c):
            Us, U_a, it, prev, d = c
            new, U_a_new = _sweep(Us, U_a, hyper, kd, y, d)
            change = jnp.linalg.norm(new[0] - Us[0]) / jnp.linalg.norm(new[0]) / d
            # halve the damping whenever the (undamped-equivalent) change grows: kills 2-cycles
            d = jnp.where(change > prev, jnp.maximum(0.5 * d, 1e-4), d)
            return new, U_a_new, it + 1, change, d

        return jax.lax.while_loop(cond, body, (Us, U_a, 0, jnp.inf, jnp.asarray(damping)))

    Us, U_a, it, change, _ = run(Us, U_a)
    return ReferenceResult(U_a, list(Us), int(it), float(change))


__all__ = ["reference_solve", "ReferenceResult"]
