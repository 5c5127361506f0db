"""§1f of docs/results.md: the noisier 2-path Markov variant, theory vs sampled networks, and its GP baselines.

Reads docs/figures/markov2_accuracy_vs_width.json (examples/markov_accuracy_vs_width.py --paths 2).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import figure, pct, table  # noqa: E402

GP_NAMES = {"GP all paths": "both paths", "GP good path": "good path alone"}


def render() -> str:
    d = figure(
        "markov2_accuracy_vs_width.json",
        "examples/markov_accuracy_vs_width.py --config configs/markov_main.toml --paths 2 --sample-widths ...",
    )
    widths = d["widths"]
    samp = [d["sampled"].get(str(n)) for n in widths]
    rows = [
        ["theory, T on validation (%)"] + [pct(a) for a in d["theory_test_accuracy"]],
        ["sampled, mean ± s.d. over chains (%)"]
        + [f"{pct(s['chain_acc_mean'], 2)} ± {pct(s['chain_acc_sd'], 2)}" if s else "–" for s in samp],
        ["max R-hat (f, U)"] + [f"{s['rhat_max']:.4f}" if s else "–" for s in samp],
    ]
    gp = ", ".join(f"{GP_NAMES.get(n, n)} **{pct(v['test_accuracy'])} %** (T = {v['T']:g})" for n, v in d["gp"].items())
    return (
        table(["N"] + [str(n) for n in widths], rows) + f"\nGP baselines (same noisier data, T on validation): {gp}.\n"
    )
