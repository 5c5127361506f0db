"""Head scores normalised across layers vs per layer, against the GD network's single-head drops
(docs/evidence.md §6; docs/theory.md §4.8, §9.2 item 3).

Reads the data of the digits head-pruning example (``docs/figures/digits_head_pruning.json``: theory scores
from ``U*`` at N = 10, normalised across layers, and the GD network's single-head accuracy drops), renormalises
the scores per layer with :func:`bayes_attn.theory.normalize_scores` (a per-layer rescaling of the same raw
scores) and reports the Spearman correlation with the drops for both, plus the within-layer correlations.
Writes ``$FIG_DIR/head_selection_score_norm.json``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "docs" / "figures" / "digits_head_pruning.json"
FIG_DIR = Path(os.environ.get("FIG_DIR", "docs/figures"))


def exact_p(a, b) -> float:
    """Two-sided permutation p-value of Spearman's rho (all permutations; n <= 8)."""
    import itertools

    import numpy as np
    from scipy.stats import rankdata

    ra, rb = rankdata(a), rankdata(b)
    obs = abs(np.corrcoef(ra, rb)[0, 1])
    perms = [abs(np.corrcoef(ra, rb[list(p)])[0, 1]) for p in itertools.permutations(range(len(rb)))]
    return float(np.mean(np.array(perms) >= obs - 1e-12))


def correlations(data: dict) -> dict:
    import numpy as np
    from scipy.stats import spearmanr

    from bayes_attn.theory import normalize_scores

    heads = data["heads"]
    L = 1 + max(int(h.split("-")[0]) for h in heads)
    per = [[data["scores"][h] for h in heads if int(h.split("-")[0]) == l] for l in range(L)]
    drops = np.array([data["drops"][h] for h in heads])
    out = {"source": "digits_head_pruning.json", "heads": heads, "drops": drops.tolist()}
    for mode in ("all", "layer"):
        s = np.concatenate(normalize_scores(per, mode))
        r = spearmanr(s, drops)
        out[mode] = {
            "scores": s.tolist(),
            "spearman_rho": float(r.statistic),
            "spearman_p": float(r.pvalue),
            "spearman_p_exact": exact_p(s, drops),
        }
    k, within = 0, []
    for l, sc in enumerate(per):
        r = spearmanr(sc, drops[k : k + len(sc)])
        within.append(
            {
                "layer": l + 1,
                "spearman_rho": float(r.statistic),
                "spearman_p": float(r.pvalue),
                "spearman_p_exact": exact_p(sc, drops[k : k + len(sc)]),
                "n_heads": len(sc),
            }
        )
        k += len(sc)
    out["within_layer"] = within
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=str(SRC))
    ap.add_argument("--smoke", action="store_true", help="same computation (it is cheap); output under $FIG_DIR")
    args = ap.parse_args(argv)
    import bayes_attn  # noqa: F401

    out = correlations(json.loads(Path(args.source).read_text()))
    FIG_DIR.mkdir(parents=True, exist_ok=True)
    tmp = FIG_DIR / "head_selection_score_norm.json.tmp"
    tmp.write_text(json.dumps(out, indent=1))
    os.replace(tmp, FIG_DIR / "head_selection_score_norm.json")
    for mode in ("all", "layer"):
        o = out[mode]
        print(
            f"normalised per {mode}: Spearman rho {o['spearman_rho']:.3f} (p {o['spearman_p']:.3g}, "
            f"exact permutation p {o['spearman_p_exact']:.3g})"
        )
    for w in out["within_layer"]:
        print(
            f"within layer {w['layer']}: rho {w['spearman_rho']:.3f} (exact permutation p {w['spearman_p_exact']:.3g}, "
            f"{w['n_heads']} heads)"
        )


if __name__ == "__main__":
    main()
