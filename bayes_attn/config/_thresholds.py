"""Pass/fail gates of the convergence diagnostics (the ``[diagnostics]`` table of a run config).

They live below :mod:`bayes_attn.inference` so that reading a config never imports a sampler; the
diagnostics that apply them are in :mod:`bayes_attn.diagnostics` (docs/theory.md §7).
"""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import nonnegative_int, positive, require


@dataclass(frozen=True)
class Thresholds:
    """Pass/fail gates of a run (every field is a key of the ``[diagnostics]`` table).

    A run passes when, on every gated quantity (test predictions ``f`` and the entries of ``U``),
    R-hat ``< rhat_max``, bulk ESS ``> ess_bulk_min`` and tail ESS ``> ess_tail_min``; it has at most
    ``max_divergences`` divergent transitions; and every chain's E-BFMI (NUTS) is ``>= bfmi_min``.

    Attributes
    ----------
    rhat_max : float
        Upper bound on the rank-normalised split R-hat (default 1.01).
    ess_bulk_min, ess_tail_min : float
        Lower bounds on bulk and tail ESS (default 400 each).
    max_divergences : int
        Divergent transitions allowed over all chains (default 0).
    bfmi_min : float
        Lower bound on each chain's E-BFMI (default 0.3; 0 switches the gate off).
    """

    rhat_max: float = 1.01
    ess_bulk_min: float = 400.0
    ess_tail_min: float = 400.0
    max_divergences: int = 0
    bfmi_min: float = 0.3

    def __post_init__(self):
        positive(self.rhat_max, "diagnostics.rhat_max")
        positive(self.ess_bulk_min, "diagnostics.ess_bulk_min")
        positive(self.ess_tail_min, "diagnostics.ess_tail_min")
        nonnegative_int(self.max_divergences, "diagnostics.max_divergences")
        require(
            isinstance(self.bfmi_min, (int, float))
            and not isinstance(self.bfmi_min, bool)
            and 0 <= self.bfmi_min < float("inf"),
            "diagnostics.bfmi_min",
            f"must be a finite number >= 0, got {self.bfmi_min!r}",
        )


__all__ = ["Thresholds"]
