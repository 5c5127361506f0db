"""Linear algebra and Gaussian-process regression: the bottom layer of the package.

Every other layer (network, theory, inference, potts) calls these functions; none of them
re-implements a Cholesky, a Gaussian marginal likelihood, a GP posterior or a kernel contraction.

* :mod:`._gp`: the PD-safe Cholesky of ``K + T I``, the Gaussian log-marginal likelihood, the
  energy ``E = ln det(K + T I) + y^T (K + T I)^-1 y`` and the GP posterior mean/variance
  (docs/theory.md eqs. (4.2b), (4.2c), (4.4a), (5.1a));
* :mod:`._kernel`: kernels linear in a matrix ``U``, ``K_U = sum_i Phi_i U Phi_i^T``, with one
  assembly policy (precompute the ``U``-independent blocks or contract ``Phi`` on every call) and
  the derivatives of the energy with respect to ``U`` (eqs. (4.2a), (4.5a), (4.5b));
* :mod:`._pathspace`: the training set in path space, ``r = N_0 n_pi`` points that give every quantity above
  of the full ``P`` points (a streamed QR of the path features; docs/theory.md §4.10), and the policy that
  picks it (``r < P``);
* :mod:`._cholesky`: the packing of symmetric positive-definite matrices as log-Cholesky
  parameters (eq. (4.7a)), with its log-Jacobian (eq. (5.2d)), and the packed upper-triangular coordinates.
"""

from ._cholesky import (
    cholesky_factor,
    cholesky_log_jacobian,
    cholesky_theta,
    diag_positions,
    diagonal,
    log_det_from_cholesky,
    pack_cholesky,
    pack_symmetric,
    symmetric_to_packed_matrix,
    tril_size,
    unpack_cholesky,
    unpack_symmetric,
)
from ._gp import energy, gaussian_log_marginal, gp_posterior, shifted_cholesky
from ._kernel import (
    KernelData,
    apply_kernel,
    energy_derivatives,
    energy_gradient,
    kernel_data,
    kernel_energy,
    kernel_log_marginal,
    kernel_diag,
    kernel_matrix,
    path_kernel_blocks,
    train_kernel_data,
    use_blocks,
)
from ._pathspace import (
    MODES,
    PathSpace,
    energy_offset,
    log_marginal_offset,
    path_space,
    path_space_blocks,
    training_set,
    use_path_space,
)

__all__ = [
    "shifted_cholesky",
    "gaussian_log_marginal",
    "energy",
    "gp_posterior",
    "KernelData",
    "kernel_data",
    "use_blocks",
    "train_kernel_data",
    "kernel_energy",
    "kernel_log_marginal",
    "MODES",
    "PathSpace",
    "path_space",
    "path_space_blocks",
    "use_path_space",
    "training_set",
    "energy_offset",
    "log_marginal_offset",
    "apply_kernel",
    "kernel_matrix",
    "kernel_diag",
    "path_kernel_blocks",
    "energy_gradient",
    "energy_derivatives",
    "tril_size",
    "diag_positions",
    "diagonal",
    "log_det_from_cholesky",
    "cholesky_factor",
    "cholesky_theta",
    "cholesky_log_jacobian",
    "pack_cholesky",
    "unpack_cholesky",
    "pack_symmetric",
    "unpack_symmetric",
    "symmetric_to_packed_matrix",
]
