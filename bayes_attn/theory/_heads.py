"""Head scores and head silencing from the path overlap ``U_1`` (docs/theory.md §4.8)."""

from __future__ import annotations

from typing import Sequence

import jax.numpy as jnp
import numpy as np

from .._errors import one_of
from ..network import head_membership

SCORE_VARIANTS = ("plain", "scale_off_diagonals")


def head_scores(U, heads: Sequence[int], variant: str = "plain", normalize: bool = True) -> list[np.ndarray]:
    """``score(l, h) = S_row + S_col - S_both`` (sum of ``|U_{pi pi'}|`` over pairs touching head ``(l,h)``).

    ``variant="scale_off_diagonals"``: ``S_both + (S_row + S_col - 2 S_both) / (2 H_l)``.
    With ``normalize`` the scores are divided by their maximum over all heads of all layers.
    Returns one array ``(H_l,)`` per layer (sort ascending: low scores are pruned first).
    """
    one_of(variant, SCORE_VARIANTS, "variant")
    A = np.abs(np.asarray(U))
    member = head_membership(heads)  # (n_pi, L)
    out = []
    for l, H in enumerate(heads):
        s = np.empty(H)
        for h in range(H):
            on = member[:, l] == h
            row, col, both = A[on].sum(), A[:, on].sum(), A[np.ix_(on, on)].sum()
            s[h] = row + col - both if variant == "plain" else both + (row + col - 2 * both) / (2 * H)
        out.append(s)
    if normalize:
        top = max(float(s.max()) for s in out)
        out = [s / top for s in out] if top > 0 else out
    return out


def silence(U, heads: Sequence[int], silenced: Sequence[tuple[int, int]]):
    """Zero every entry of ``U`` whose row or column path uses a silenced ``(layer, head)`` (0-based).

    The predictor is then recomputed at the silenced ``U`` without re-optimising (§4.8).
    """
    member = head_membership(heads)
    keep = np.ones(member.shape[0], dtype=bool)
    for l, h in silenced:
        keep &= member[:, l] != h
    m = jnp.asarray(keep, dtype=jnp.asarray(U).dtype)
    return jnp.asarray(U) * m[:, None] * m[None, :]


__all__ = ["head_scores", "silence", "SCORE_VARIANTS"]
