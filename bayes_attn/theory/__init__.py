"""Finite-width thermodynamic-limit theory (docs/theory.md §4): action, solver, predictor."""

from ._action import (
    action,
    energy,
    entropy,
    gp_order_parameters,
    load,
    partial_trace,
    reduced_action,
    u_a_closed_form,
)

__all__ = [
    "partial_trace",
    "entropy",
    "energy",
    "u_a_closed_form",
    "action",
    "reduced_action",
    "gp_order_parameters",
    "load",
]
