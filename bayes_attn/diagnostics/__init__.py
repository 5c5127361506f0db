"""Diagnostics: convergence gates on invariant quantities and the HTML report."""

from ._convergence import GATED, Report, Thresholds, format_report, invariant_draws, summarize
from ._report import render_report, write_report

__all__ = ["Thresholds", "Report", "summarize", "format_report", "invariant_draws", "GATED",
           "render_report", "write_report"]
