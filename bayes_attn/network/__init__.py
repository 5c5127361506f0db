"""The network: specification, fixed attention, path expansion, kernels."""

from ._attention import HeadLayer, hardmax_keys, pool, qk_scores, softmax_keys, w_scores
from ._kernels import (
    collapsed_log_likelihood,
    gaussian_log_marginal,
    gp_posterior,
    gp_predict_U,
    kernel_fn,
    path_kernel_blocks,
    renormalized_kernel,
    renormalized_kernel_diag,
)
from ._paths import (
    backward_readouts,
    effective_weights,
    forward,
    forward_paths,
    gram,
    head_membership,
    order_parameters,
    path_attention,
    path_inputs,
    path_labels,
    phi,
)
from ._spec import READOUTS, NetworkSpec

__all__ = [
    "NetworkSpec",
    "READOUTS",
    "HeadLayer",
    "softmax_keys",
    "hardmax_keys",
    "w_scores",
    "qk_scores",
    "pool",
    "path_attention",
    "path_inputs",
    "phi",
    "backward_readouts",
    "effective_weights",
    "gram",
    "order_parameters",
    "forward",
    "forward_paths",
    "path_labels",
    "head_membership",
    "renormalized_kernel",
    "path_kernel_blocks",
    "kernel_fn",
    "renormalized_kernel_diag",
    "gaussian_log_marginal",
    "gp_posterior",
    "gp_predict_U",
    "collapsed_log_likelihood",
]
