"""Two `bayes-attn sample` commands at once on the 2-core machine (benchmarks/sharing/results.json): each
placement's lone run and the slower of two runs started together, with the ratios."""

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import table  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LABELS = {"1": "`--cpus 1` (default: claim the least-loaded free core, pin)", "all": "`--cpus all` (unpinned)"}


def render() -> str:
    p = ROOT / "benchmarks" / "sharing" / "results.json"
    if not p.is_file():
        return "_not run: benchmarks/sharing/results.json is missing_\n"
    d = json.loads(p.read_text())
    rows = []
    base = d["summary"].get("all", {}).get("lone_median_s")
    for cpus, s in d["summary"].items():
        lone = [r["seconds"][0] for r in d["rows"] if r["cpus"] == cpus and r["processes"] == 1]
        pair = [max(r["seconds"]) for r in d["rows"] if r["cpus"] == cpus and r["processes"] == 2]
        rows.append(
            [
                LABELS.get(cpus, cpus),
                f"{s['lone_median_s']:.1f} s",
                ", ".join(f"{t:.1f}" for t in lone),
                f"{statistics.median(pair):.1f} s",
                ", ".join(f"{t:.1f}" for t in pair),
                f"{s['concurrent_over_lone']:.2f}×",
                f"{s['lone_median_s'] / base:.2f}×" if base else "—",
            ]
        )
    out = table(
        [
            "placement",
            "one run alone (median)",
            "runs",
            "two at once, slower run (median)",
            "runs",
            "two at once / alone",
            "alone / unpinned alone",
        ],
        rows,
    )
    return out + (
        f"\nThe N = 10 order-parameter cell (`benchmarks/sharing/cell.toml`: NUTS, 4 chains x (500 + 1000)), "
        f"warm compilation cache, {d['machine']['cores']} cores.\n"
    )
