"""Head scores and head silencing from the path overlap ``U_1`` (docs/theory.md §4.8)."""

from __future__ import annotations

from typing import Sequence

import jax.numpy as jnp
import numpy as np

from .._errors import InputError, one_of
from ..network import head_membership

#: the ``variant`` of :func:`head_scores`
SCORE_VARIANTS = ("plain", "scale_off_diagonals")


#: the named normalisations of :func:`normalize_scores`: by the maximum over all heads, or within each layer
NORMALIZATIONS = ("all", "layer")


def normalize_scores(scores, normalize: bool | str = True) -> list[np.ndarray]:
    """Divide head scores by their maximum over all heads (``True``/``"all"``, docs/theory.md §4.8) or over
    the heads of each layer separately (``"layer"``, docs/evidence.md §6); ``False`` leaves them as they are."""
    scores = [np.asarray(s, dtype=float) for s in scores]
    if normalize is False:
        return scores
    mode = "all" if normalize is True else one_of(normalize, NORMALIZATIONS, "normalize")
    if mode == "layer":
        return [s / s.max() if s.max() > 0 else s for s in scores]
    top = max(float(s.max()) for s in scores)
    return [s / top for s in scores] if top > 0 else scores


def head_scores(U, heads: Sequence[int], variant: str = "plain", normalize: bool | str = True) -> list[np.ndarray]:
    """``score(l, h) = S_row + S_col - S_both`` (sum of ``|U_{pi pi'}|`` over pairs touching head ``(l,h)``).

    ``variant="scale_off_diagonals"``: ``S_both + (S_row + S_col - 2 S_both) / (2 H_l)``.
    ``normalize``: ``True`` or ``"all"`` divides by the maximum over all heads of all layers (docs/theory.md
    §4.8), ``"layer"`` by the maximum within each layer (docs/evidence.md §6), ``False`` not at all.
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
    return normalize_scores(out, normalize)


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


def drop_head(heads: Sequence[int], removed: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Heads kept per layer (0-based original indices) after removing ``removed``; every layer keeps one."""
    keep = [[h for h in range(H) if (l, h) not in set(map(tuple, removed))] for l, H in enumerate(heads)]
    for l, k in enumerate(keep):
        if not k:
            raise InputError(f"heads: removing {list(removed)} empties layer {l + 1}")
    return keep


def sub_network(spec, phi, keep):
    """``(spec, Phi)`` of the sub-network with heads ``keep`` per layer (docs/theory.md eq. (4.6d))."""
    from ._predictor import subset_phi

    return spec.with_(heads=tuple(len(k) for k in keep)), subset_phi(phi, spec.heads, keep)


def evidence_head_selection(
    spec, phi_train, y, phi_test=None, y_test=None, progress: bool = False, max_removals: int | None = None
) -> list[dict]:
    """Backward elimination by evidence (docs/evidence.md §6): repeatedly remove the head whose removal costs the
    least saddle-point log evidence (eq. (E1), saddle re-solved for every candidate sub-network).

    Returns one dict per stage (stage 0 = the full network): ``removed`` (all heads removed so far, original
    0-based ``(layer, head)``), ``log_evidence``, ``candidates`` (the evidence of every candidate removal) and,
    with a test set, ``test_accuracy`` of the sub-network's theory predictor.  ``max_removals`` stops early.
    """
    import warnings

    from ._evidence import saddle_log_evidence
    from ._predictor import predict, subset_phi
    from ._solver import TheoryWarning

    heads = tuple(spec.heads)

    def evaluate(removed):
        keep = drop_head(heads, removed)
        sub, ph = sub_network(spec, phi_train, keep)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TheoryWarning)
            ev = saddle_log_evidence(sub, ph, y)
        acc = None
        if phi_test is not None:
            m, _ = predict(ev.solution.U, ph, subset_phi(phi_test, heads, keep), jnp.asarray(y), sub.temperature)
            acc = float(np.mean(np.sign(np.asarray(m)) == np.asarray(y_test)))
        return ev.log_evidence, acc

    removed: list[tuple[int, int]] = []
    le, acc = evaluate(removed)
    stages = [{"removed": [], "log_evidence": le, "test_accuracy": acc, "candidates": {}}]
    total = sum(heads) - len(heads)
    if max_removals is not None:
        total = min(total, int(max_removals))
    for _ in range(total):
        cands = {}
        for l, H in enumerate(heads):
            for h in range(H):
                if (l, h) in removed or len(drop_head(heads, removed)[l]) == 1:
                    continue
                cands[(l, h)] = evaluate(removed + [(l, h)])
        best = max(cands, key=lambda k: cands[k][0])
        removed = removed + [best]
        stages.append(
            {
                "removed": [list(k) for k in removed],
                "log_evidence": cands[best][0],
                "test_accuracy": cands[best][1],
                "candidates": {f"{l}-{h}": v[0] for (l, h), v in cands.items()},
            }
        )
        if progress:
            print(f"evidence selection: removed {best}, log evidence {cands[best][0]:.3f}", flush=True)
    return stages


__all__ = [
    "head_scores",
    "normalize_scores",
    "NORMALIZATIONS",
    "silence",
    "SCORE_VARIANTS",
    "drop_head",
    "sub_network",
    "evidence_head_selection",
]
