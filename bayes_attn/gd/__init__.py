"""Gradient-descent-trained attention network with learned Q/K: training, export, head pruning."""

from ._model import (
    GDConfig,
    apply,
    attention,
    export_layers,
    head_masks,
    init_params,
    masked_values,
    standard_weights,
    u_gd,
)
from ._fixed import epoch_batches, holdout_split, train_on_set
from ._prune import pruning_curve, pruning_orders, rank_correlation, single_head_drops
from ._train import GDResult, accuracy, load_gd_params, mse_loss, save_gd, train

__all__ = [
    "GDConfig",
    "GDResult",
    "init_params",
    "standard_weights",
    "attention",
    "head_masks",
    "masked_values",
    "apply",
    "export_layers",
    "u_gd",
    "train",
    "train_on_set",
    "holdout_split",
    "epoch_batches",
    "accuracy",
    "mse_loss",
    "save_gd",
    "load_gd_params",
    "single_head_drops",
    "pruning_curve",
    "pruning_orders",
    "rank_correlation",
]
