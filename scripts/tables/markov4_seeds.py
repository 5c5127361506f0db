"""§1e of docs/results.md: theory vs sampled networks over data/head seeds (Markov 4-path task).

Reads docs/figures/markov4_accuracy_vs_width_seeds.json
(examples/markov_accuracy_vs_width.py --data-seeds 0 1 2 ...).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import figure, minus, pct, table  # noqa: E402

GP_NAMES = {"GP all paths": "GP all paths", "GP good path": "good path", "GP good + denoising": "good + denoising"}


def render() -> str:
    d = figure(
        "markov4_accuracy_vs_width_seeds.json",
        "examples/markov_accuracy_vs_width.py --config configs/markov_main.toml --data-seeds 0 1 2 --sample-widths ...",
    )
    k = len(d["data_seeds"])
    rows = [
        [
            r["width"],
            f"{pct(r['sampled_mean'], 2)} ± {pct(r['sampled_sd'], 2)} %",
            f"{pct(r['theory_mean'], 2)} ± {pct(r['theory_sd'], 2)} %",
            "yes" if r["within_error_bar"] else "**no**",
            f"{minus(pct(r['paired_diff_mean'], 2))} ± {pct(r['paired_diff_se'], 2)} points",
            f"{r['rhat_max']:.4f}",
        ]
        for r in sorted(d["sampled"], key=lambda r: r["width"])
    ]
    gp = ", ".join(f"{GP_NAMES.get(n, n)} {pct(v['mean'])} ± {pct(v['sd'])} %" for n, v in d["gp"].items())
    return (
        table(
            [
                "N",
                f"sampled acc., mean ± s.d. over {k} seeds",
                "theory acc., mean ± s.d.",
                "theory within the sampled error bar",
                "paired difference sampled − theory (mean ± s.e.)",
                "max R-hat",
            ],
            rows,
        )
        + f"\nGP baselines (T on validation, mean ± s.d. over the {k} seeds): {gp}.\n"
    )
