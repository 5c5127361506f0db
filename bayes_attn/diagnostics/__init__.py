"""Diagnostics: convergence gates on invariant quantities (and, later, reports)."""

from ._convergence import GATED, Report, Thresholds, format_report, invariant_draws, summarize

__all__ = ["Thresholds", "Report", "summarize", "format_report", "invariant_draws", "GATED"]
