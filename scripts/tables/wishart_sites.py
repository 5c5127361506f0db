"""docs/wishart.md "Why non-centred": centred vs non-centred sites of the order-parameter chain at small width.

Reads benchmarks/wishart_sites/results.json (benchmarks/wishart_sites/run.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, table  # noqa: E402


def render(name: str = "benchmarks/wishart_sites/results.json") -> str:
    d = load(name, "benchmarks/wishart_sites/run.py")
    rows = []
    for c in d["cases"]:
        where = c["min_site_at_divergence"]
        rows.append(
            [
                c["sites"],
                c["width"],
                "Markov data, T = %g" % c["temperature"] if c["data"] else "prior only",
                f"{c['chains']} x ({c['warmup']} + {c['draws']})",
                c["divergences"],
                f"{c['median_steps']:.0f}",
                " / ".join(f"{s:.2f}" for s in c["step_size"]),
                ", ".join(f"{k} {v:.1f}" for k, v in where.items()) or "–",
            ]
        )
    return table(
        [
            "sites",
            "N",
            "density",
            "chains x (warm-up + draws)",
            "divergences",
            "median leapfrog steps",
            "step size per chain",
            "smallest site at a divergence",
        ],
        rows,
    )
