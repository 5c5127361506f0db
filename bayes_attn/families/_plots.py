"""The contact-map figure of a protein family (docs/potts_proteins.md §3; scores in, PNG out; matplotlib Agg)."""

from __future__ import annotations

import numpy as np

from .._io import atomic_write
from ._contacts import ranked_pairs


def plot_contact_map(scores, contacts, known, residues, path, *, title: str = "", min_separation: int = 6):
    """The standard contact-map figure: true contacts (grey, lower and upper triangle) and the top-L
    predicted pairs with |i - j| >= ``min_separation`` in the upper triangle (blue: a true contact, red:
    not, orange: a residue without structure); without ``contacts`` only the predictions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    S = np.asarray(scores)
    L = S.shape[0]
    r = ranked_pairs(S, residues)
    ok = r["separation"] >= min_separation
    i, j = r["i"][ok][:L], r["j"][ok][:L]
    fig, ax = plt.subplots(figsize=(5.2, 5))
    if contacts is not None:
        T = np.asarray(contacts, bool)
        ti, tj = np.nonzero(np.triu(T, min_separation) | np.tril(T, -min_separation))
        ax.scatter(tj, ti, s=6, c="0.78", marker="s", linewidths=0, label="true contact (< 8 Å)")
        kn = np.asarray(known, bool)
        hit = T[i, j]
        unk = ~(kn[i] & kn[j])
        ax.scatter(j[hit], i[hit], s=9, c="tab:blue", label=f"top-L predicted, true ({int(hit.sum())})")
        ax.scatter(
            j[~hit & ~unk],
            i[~hit & ~unk],
            s=9,
            c="tab:red",
            label=f"top-L predicted, false ({int((~hit & ~unk).sum())})",
        )
        if unk.any():
            ax.scatter(j[unk], i[unk], s=9, c="tab:orange", label="top-L predicted, no structure")
    else:
        ax.scatter(j, i, s=9, c="tab:blue", label="top-L predicted")
    ticks = np.linspace(0, L - 1, min(L, 6)).astype(int)
    res = np.asarray(residues)
    ax.set_xticks(ticks, [str(res[t]) for t in ticks])
    ax.set_yticks(ticks, [str(res[t]) for t in ticks])
    ax.set_xlim(-1, L)
    ax.set_ylim(L, -1)
    ax.set_aspect("equal")
    ax.set_xlabel("residue j")
    ax.set_ylabel("residue i")
    ax.set_title(title, fontsize=9)
    ax.legend(loc="lower left", fontsize=7, markerscale=1.5, framealpha=0.9)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=130, format="png"), field="path")
    plt.close(fig)


__all__ = ["plot_contact_map"]
