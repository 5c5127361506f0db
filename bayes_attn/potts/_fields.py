"""Per-site fields of the generalized Potts model (docs/potts.md §1, §1.2 "optional variant").

Protein-family-like fields (project choice): every site ``i`` has a consensus colour ``c_i``
(uniform, seeded) that receives a field ``consensus``, and every entry gets Gaussian noise,

    h_i(a) = consensus * 1[a = c_i] + field_sigma * N(0, 1) .

With ``consensus = 0`` this is potts.md §1.2's weak random field ``N(0, sigma_h^2)``.
"""

from __future__ import annotations

import numpy as np

from .._errors import positive, require


def generate_fields(L: int, C: int, seed: int = 0, *, field_sigma: float = 0.0, consensus: float = 0.0):
    """Seeded fields (L, C) with a consensus colour per site plus Gaussian noise, or ``None`` when both
    strengths are 0; returns (h, consensus colours (L,) or None)."""
    positive(L, "L", integer=True)
    positive(C, "C", integer=True)
    for name, v in (("field_sigma", field_sigma), ("consensus", consensus)):
        require(
            isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) and v >= 0,
            f"potts.{name}",
            f"must be a finite number >= 0, got {v!r}",
        )
    if field_sigma == 0 and consensus == 0:
        return None, None
    rng = np.random.default_rng([seed, 7919])
    cons = rng.integers(0, C, L)
    h = field_sigma * rng.standard_normal((L, C))
    h[np.arange(L), cons] += consensus
    return h, cons


__all__ = ["generate_fields"]
