"""docs/benchmarks.md: the exact order-parameter posterior at P = N = 10^4, timed and compared with the theory.

Reads benchmarks/scale/sample.json (benchmarks/scale/sample.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, minus, table, width_label  # noqa: E402


def render() -> str:
    d = load("benchmarks/scale/sample.json", "benchmarks/scale/sample.py")
    r, c = d["run"], d["commands"]
    grads = sum(r["gradients"].values())
    rows = [
        ["`bayes-attn sample`", f"{r['sampling_s']:.0f} s", f"{c['sample']['wall_s']:.0f} s",
         f"{c['sample']['peak_rss_gb']:.2f} GB"],
        ["`bayes-attn theory`", "—", f"{c['theory']['wall_s']:.0f} s", f"{c['theory']['peak_rss_gb']:.2f} GB"],
    ]  # fmt: skip
    gates = [
        [
            f"{r['chains']} x ({r['warmup']} + {r['draws']})",
            f"{grads:,}",
            f"{r['steps_per_draw']:.2f}",
            f"{r['step_size']:.2f}",
            f"{r['max_rhat']:.4f}",
            f"{r['min_ess_bulk']:.0f}",
            f"{r['min_ess_tail']:.0f}",
            f"{r['divergences']}",
            f"{100 * r['acc_sampled']:.2f} %",
            f"{100 * r['acc_theory']:.2f} %",
            minus(f"{r['acc_gap_pts']:+.2f}"),
        ]
    ]
    return (
        f"P = {width_label(d['P'])}, N = {width_label(d['N'])}, {d['n_test']} test inputs, `{d['config']}` (NUTS from "
        f"the `{r['init']}` start, tree depth at most {d['max_tree_depth']}); {d['machine']['cpus']} cores, one job.\n\n"
        + table(["command", "sampling", "wall", "peak memory"], rows)
        + "\n"
        + table(
            [
                "chains",
                "gradients",
                "leapfrog steps per draw",
                "step size",
                "max R-hat",
                "min bulk ESS",
                "min tail ESS",
                "divergences",
                "test acc., sampled",
                "theory",
                "gap (pts)",
            ],
            gates,
        )
    )
