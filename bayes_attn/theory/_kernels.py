"""Path-path kernels and the renormalised kernel on train/test splits (docs/theory.md §4.1–§4.2).

Everything is a contraction of ``Phi`` (``(P, N0, n_pi)``, memory ``O(P N0 n_pi)``); only
:func:`path_kernels` forms the ``n_pi x n_pi`` array of kernels (``O(n_pi^2 P_a P_b)``), for
plots and small problems.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from ..network import path_kernel_blocks, renormalized_kernel, renormalized_kernel_diag


def path_kernels(phi_a, phi_b):
    """``C[pi, pi', m, n] = C_{pi pi'}(x_m, x_n) = (sigma_0^2/N0) x^pi(x_m) . x^pi'(x_n)`` (§4.1).

    Uses ``C = n_pi B`` with ``B`` the blocks of :func:`bayes_attn.network.path_kernel_blocks`.
    ``phi_a``/``phi_b``: ``Phi`` of the two splits (train/train, test/train, test/test).
    """
    return phi_a.shape[2] * path_kernel_blocks(phi_a, phi_b)


class Kernels(NamedTuple):
    """``K_U`` on train/train ``(P, P)``, train/test ``(P, Q)`` and the test diagonal ``(Q,)``."""

    train: jnp.ndarray
    train_test: jnp.ndarray
    test_diag: jnp.ndarray


def kernels(U, phi_train, phi_test) -> Kernels:
    """Renormalised kernel ``K_U = (1/n_pi) sum U_{pi pi'} C_{pi pi'}`` on all blocks (§4.2)."""
    return Kernels(renormalized_kernel(phi_train, phi_train, U),
                   renormalized_kernel(phi_train, phi_test, U),
                   renormalized_kernel_diag(phi_test, U))


__all__ = ["path_kernels", "Kernels", "kernels"]
