"""Path kernels and the renormalised-kernel predictor of the network (docs/theory.md §4.1–§4.2, §5.1).

The numerical work (kernel assembly, Cholesky, GP posterior) is :mod:`bayes_attn.linalg`'s; this
module names the network's objects:

* :func:`path_kernel_matrix`: the ``n_pi x n_pi`` array of path–path kernels ``C`` (eqs. (4.1a), (4.1c));
* :class:`PathKernels`: the kernel data of the train/train and train/test blocks plus ``Phi`` of the
  test inputs, a pytree passed to compiled code as a traced argument;
* :func:`training_kernels`: the same for the training set as the kernel functions see it (its path-space points
  when they are fewer than the inputs, docs/theory.md §4.10);
* :func:`predictive`: the predictor mean and variance on the test inputs at a path overlap ``U``
  (eqs. (4.2b), (4.2c)): the theory's predictor at ``U = U_1^*`` and the Rao–Blackwellised conditional
  statistics ``m_W, v_W`` at ``U = U_1(W)`` (eq. (5.1c)).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from ..linalg import KernelData, apply_kernel, gp_posterior, kernel_data, kernel_diag, path_kernel_blocks, training_set


def path_kernel_matrix(phi_a, phi_b):
    """``C[pi, pi', m, n] = C_{pi pi'}(x_m, x_n) = (sigma_0^2 / N0) x^pi(x_m) . x^pi'(x_n)`` (eqs. (4.1a), (4.1c)).

    ``C = n_pi B`` with ``B`` the blocks of :func:`bayes_attn.linalg.path_kernel_blocks`; memory
    ``O(n_pi^2 P_a P_b)`` (for plots and small problems).
    """
    return phi_a.shape[2] * path_kernel_blocks(phi_a, phi_b)


class PathKernels(NamedTuple):
    """Kernel data of the renormalised kernel ``K_U`` on train/train and train/test, and ``Phi`` of the test set."""

    train: KernelData
    cross: KernelData
    phi_test: jnp.ndarray


def path_kernels(phi_train, phi_test, *, once: bool = False) -> PathKernels:
    """:class:`PathKernels` from ``Phi`` of the training and test inputs (assembly policy of :mod:`bayes_attn.linalg`).

    ``once``: the kernels will be evaluated at one ``U`` only (a prediction), so ``Phi`` is contracted instead of
    building the blocks, which pay off only over many evaluations (8x fewer operations for the Markov task's
    1000 test inputs; the same numbers up to rounding)."""
    phi_train, phi_test = jnp.asarray(phi_train), jnp.asarray(phi_test)
    limit = {"max_floats": 0} if once else {}
    return PathKernels(kernel_data(phi_train, **limit), kernel_data(phi_train, phi_test, **limit), phi_test)


def training_kernels(phi_train, phi_test, y, *, once: bool = False, mode: str = "auto"):
    """``(kernels, y_kd)``: :func:`path_kernels` of the training set as the kernel functions should see it, in path
    space when :func:`bayes_attn.linalg.use_path_space` says so (``mode``: ``"auto" | "dense" | "path"``): the
    train/train and train/test kernels of the ``r = N_0 n_pi`` path-space points, with the labels ``y_kd`` that go
    with them (docs/theory.md §4.10).  :func:`predictive` at ``(kernels, y_kd)`` is the predictor of the full
    training set, and the energies of :mod:`bayes_attn.linalg` at ``(kernels.train, y_kd)`` its energies."""
    phi_kd, y_kd, offset = training_set(phi_train, y, mode)
    pk = path_kernels(phi_kd, phi_test, once=once)
    return pk._replace(train=pk.train._replace(offset=offset)), jnp.asarray(y_kd)


def predictive(U, pk: PathKernels, y, T):
    """Predictor mean ``k^T (K+TI)^-1 y`` and variance ``K(x*,x*) - k^T (K+TI)^-1 k`` at ``U`` (eqs. (4.2b), (4.2c)).

    At ``U = U_1^*`` this is the theory's predictor; at ``U = U_1(W)`` the Rao–Blackwellised
    conditional mean and variance of the collapsed model (eq. (5.1c)).  No observation noise.
    """
    return gp_posterior(apply_kernel(pk.train, U), apply_kernel(pk.cross, U), kernel_diag(pk.phi_test, U), y, T)


__all__ = ["path_kernel_matrix", "PathKernels", "path_kernels", "training_kernels", "predictive"]
