"""Diagnostics: the convergence verdict on invariant quantities, theory vs sampled comparison,
figures and the HTML report (data / statistics / plots apart, as in the ArviZverse)."""

from ._compare import COLUMNS, accuracy_error, chain_accuracies, format_table, match, predictor_mcse, run_gaps
from ._convergence import GATED, Report, Thresholds, format_report, invariant_draws, summarize
from ._plots import comparison_figures, compare_plots
from ._report import render_report, write_report

__all__ = [
    "Thresholds",
    "Report",
    "summarize",
    "format_report",
    "invariant_draws",
    "GATED",
    "match",
    "run_gaps",
    "format_table",
    "COLUMNS",
    "chain_accuracies",
    "accuracy_error",
    "predictor_mcse",
    "comparison_figures",
    "compare_plots",
    "render_report",
    "write_report",
]
