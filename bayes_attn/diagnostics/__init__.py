"""Diagnostics: the convergence verdict on invariant quantities, theory vs sampled comparison,
figures and the HTML report (data / statistics / plots apart, as in the ArviZverse)."""

from typing import TYPE_CHECKING

from ._compare import COLUMNS, accuracy_error, chain_accuracies, format_table, match, predictor_mcse, run_gaps
from ._convergence import GATED, Report, Thresholds, exchange_summary, format_report, invariant_draws, summarize
from ._sweep import CELL_SUMMARY

if TYPE_CHECKING:
    from ._plots import compare_plots, comparison_figures
    from ._report import render_report, write_report

#: imported on first use: they need matplotlib (about 1.4 s to import), which ``bayes-attn diagnose`` and the
#: sweep's workers never do
_LAZY = {
    "comparison_figures": "._plots",
    "compare_plots": "._plots",
    "render_report": "._report",
    "write_report": "._report",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Thresholds",
    "Report",
    "summarize",
    "exchange_summary",
    "format_report",
    "invariant_draws",
    "GATED",
    "match",
    "run_gaps",
    "format_table",
    "COLUMNS",
    "CELL_SUMMARY",
    "chain_accuracies",
    "accuracy_error",
    "predictor_mcse",
    "comparison_figures",
    "compare_plots",
    "render_report",
    "write_report",
]
