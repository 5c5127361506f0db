"""Finite-width thermodynamic-limit theory (docs/theory.md §4): action, solver, predictor.

* :mod:`._action`: entropy, energy, ``U_a`` closed form, action (§4.4–§4.5);
* :mod:`._equations`: analytic gradients / Hessian, stationarity maps (§4.5);
* :mod:`._solver`: Newton solver with a status record (§4.7; docs/theory_solver.md);
* :mod:`._reference`: independent block fixed-point reference solver;
* :mod:`._kernels`, :mod:`._predictor`, :mod:`._heads`: kernels, predictor statistics, GP
  baselines, head scores and silencing (§4.1–§4.2, §4.6, §4.8).
"""

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
from ._equations import energy_derivatives, energy_gradient, kernel_data, kernel_of, u1_fixed_point, u_l_root
from ._heads import SCORE_VARIANTS, head_scores, silence
from ._kernels import Kernels, kernels, path_kernels
from ._scan import read_theory, scan, scan_ok
from ._predictor import gp_overlap, gp_predict, predict, subset_paths, subset_phi, predictor_metrics
from ._reference import ReferenceResult, reference_solve
from ._solver import Solution, SolverStatus, TheoryWarning, solve

__all__ = [
    "partial_trace",
    "entropy",
    "energy",
    "u_a_closed_form",
    "action",
    "reduced_action",
    "gp_order_parameters",
    "load",
    "kernel_data",
    "kernel_of",
    "energy_gradient",
    "energy_derivatives",
    "u1_fixed_point",
    "u_l_root",
    "solve",
    "Solution",
    "SolverStatus",
    "TheoryWarning",
    "reference_solve",
    "ReferenceResult",
    "path_kernels",
    "Kernels",
    "kernels",
    "predict",
    "predictor_metrics",
    "gp_overlap",
    "gp_predict",
    "subset_paths",
    "subset_phi",
    "head_scores",
    "silence",
    "SCORE_VARIANTS",
    "scan",
    "scan_ok",
    "read_theory",
]
