"""docs/benchmarks.md and docs/samplers.md "Benchmark": one row per (width, sampler) cell.

Reads benchmarks/samplers/results.json (benchmarks/samplers/run.py).  The work count is the
``n_steps`` sample statistic (bayes_attn.inference.samplers STATS); files written before it was
introduced carry ``n_grad_evals`` (gradient-based samplers) or ``n_gram_evals`` (Gibbs) instead.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, num, table  # noqa: E402

ORDER = ("nuts_full", "nuts_collapsed", "mala", "ula", "gibbs", "gibbs_full", "wishart")


def _evals(c: dict) -> str:
    """Post-warm-up work: gradient evaluations or P x P Gram solves (Gibbs)."""
    if "n_grad_evals" in c:
        return f"{c['n_grad_evals']} grad"
    if "n_gram_evals" in c:
        return f"{c['n_gram_evals']} Gram"
    if "n_steps" in c:
        return f"{c['n_steps']} " + ("Gram" if c.get("config", {}).get("kind") == "gibbs" else "grad")
    return "–"


def _status(c: dict) -> str:
    return f"timeout ({c.get('progress', 'n/a')})" if c["status"] == "timeout" else c["status"]


def render() -> str:
    d = load("benchmarks/samplers/results.json", "benchmarks/samplers/run.py")
    cells = sorted(
        d["cells"],
        key=lambda c: (c["width"], ORDER.index(c["sampler"]) if c["sampler"] in ORDER else len(ORDER), c["sampler"]),
    )
    rows = []
    for c in cells:
        ess_s = (
            f"≤ {c['ess_per_s_upper_bound']:.3g}" if "ess_per_s_upper_bound" in c else num(c.get("ess_per_s"), ".3g")
        )
        ratio = (
            f"≥ {c['ratio_to_nuts_full_lower_bound']:.3g}"
            if "ratio_to_nuts_full_lower_bound" in c
            else num(c.get("ratio_to_nuts_full"), ".3g")
        )
        rows.append(
            [
                c["width"],
                c["sampler"],
                _status(c),
                num(c.get("wall_s"), ".0f"),
                num(c.get("cpu_s"), ".0f"),
                _evals(c),
                num(c.get("ess_bulk_min"), ".0f"),
                ess_s,
                num(c.get("rhat_max"), ".3f"),
                num(c.get("divergences"), "d"),
                num(c.get("peak_rss_mb"), ".0f"),
                ratio,
                num(c.get("cpu_ratio_to_nuts_full"), ".3g"),
            ]
        )
    head = [
        "width",
        "sampler",
        "status",
        "wall s",
        "CPU s",
        "post-warm-up evals",
        "min ESS bulk (f, U)",
        "ESS/s",
        "max R-hat",
        "divergences",
        "peak RSS MB",
        "ESS/s ÷ NUTS full",
        "ESS/CPU-s ÷ NUTS full",
    ]
    keep = [j for j in range(len(head)) if any(r[j] != "–" for r in rows)]  # no column that is empty everywhere
    return table([head[j] for j in keep], [[r[j] for j in keep] for r in rows])
