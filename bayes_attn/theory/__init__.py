"""Finite-width thermodynamic-limit theory (docs/theory.md §4) and the exact finite-width order-parameter
posterior (§5.2).

* :mod:`._action`: entropy, its closed-form gradient and reduced Hessian, energy, ``U_a`` closed form, action
  (eqs. (4.4a)–(4.4c), (4.5c), (4.5d), (4.5f));
* :mod:`._equations`: the ``U_1`` fixed point and the ``U_l`` root (eqs. (4.5c), (4.5e));
* :mod:`._solver`: Newton solver with a status record (§4.7; docs/theory_solver.md);
* :mod:`._reference`: independent block fixed-point reference solver;
* :mod:`._predictor`, :mod:`._heads`: predictor statistics, GP baselines, head scores and silencing
  (§4.2, §4.6, §4.8);
* :mod:`._scan`: width x temperature scans as xarray Datasets;
* :mod:`._exact`: the exact finite-width density of the order parameters (§5.2).

The numerical kernels (Cholesky, GP posterior, kernel assembly, energy derivatives) are
:mod:`bayes_attn.linalg`'s; path kernels and the predictor at a given ``U`` are :mod:`bayes_attn.network`'s.
"""

from ._action import (
    action,
    energy,
    entropy,
    entropy_gradient,
    gp_order_parameters,
    load,
    partial_trace,
    reduced_action,
    reduced_entropy_hessian,
    u_a_closed_form,
)
from ._equations import u1_fixed_point, u_l_root
from ._evidence import (
    ExactEvidence,
    SaddleEvidence,
    exact_log_evidence,
    find_mode,
    fisher_attention_grad,
    log_evidence,
    saddle_attention_grad,
    saddle_log_evidence,
)
from ._exact import (
    OrderParameterLayout,
    check_widths,
    exact_log_density,
    exact_log_prior_and_likelihood,
    prior_log_density,
    wishart_log_normalizer,
)
from ._heads import (
    NORMALIZATIONS,
    SCORE_VARIANTS,
    drop_head,
    evidence_head_selection,
    head_scores,
    normalize_scores,
    silence,
    sub_network,
)
from ._learn import (
    FitResult,
    attention_matrices,
    attention_params,
    check_basis,
    check_fit_settings,
    fit_attention,
    log_hyperprior,
    phi_of,
    project_attention,
    theory_accuracy,
    with_attention,
)
from ._predictor import gp_predict, predict, predictor_metrics, subset_paths, subset_phi
from ._reference import ReferenceResult, reference_solve
from ._scan import gp_baselines, grid_dataset, read_theory, scan, scan_ok, solve_grid, solve_with_warm_start
from ._solver import Solution, SolverStatus, TheoryWarning, solve

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
    "u1_fixed_point",
    "u_l_root",
    "solve",
    "Solution",
    "SolverStatus",
    "TheoryWarning",
    "reference_solve",
    "ReferenceResult",
    "predict",
    "predictor_metrics",
    "gp_predict",
    "subset_paths",
    "subset_phi",
    "head_scores",
    "silence",
    "SCORE_VARIANTS",
    "scan",
    "scan_ok",
    "solve_grid",
    "solve_with_warm_start",
    "gp_baselines",
    "grid_dataset",
    "read_theory",
    "OrderParameterLayout",
    "check_widths",
    "prior_log_density",
    "wishart_log_normalizer",
    "exact_log_density",
    "exact_log_prior_and_likelihood",
    "SaddleEvidence",
    "saddle_log_evidence",
    "log_evidence",
    "ExactEvidence",
    "exact_log_evidence",
    "find_mode",
    "saddle_attention_grad",
    "fisher_attention_grad",
    "NORMALIZATIONS",
    "normalize_scores",
    "drop_head",
    "sub_network",
    "evidence_head_selection",
    "FitResult",
    "attention_params",
    "attention_matrices",
    "phi_of",
    "with_attention",
    "theory_accuracy",
    "fit_attention",
    "check_basis",
    "check_fit_settings",
    "log_hyperprior",
    "project_attention",
]
