"""Two `bayes-attn sample` commands at once on the 2-core machine (benchmarks/sharing/results.json): each
placement's lone run and the slower of two runs started together, with the ratios."""

import json
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
    # the benchmark runs in the order they were made (the file names each by its date, or "earlier" for rows kept
    # by ``run.py --merge``): the last is "latest", the others "earlier" (numbered when there are several)
    runs = list(dict.fromkeys(s["run"] for s in d["summary"]))
    named = {
        r: "latest" if k == len(runs) - 1 else "earlier" if len(runs) <= 2 else f"earlier {k + 1}"
        for k, r in enumerate(runs)
    }
    rows = []
    for s in d["summary"]:
        same = [r for r in d["rows"] if r["cpus"] == s["cpus"] and r.get("run", "earlier") == s["run"]]
        lone = [r["seconds"][0] for r in same if r["processes"] == 1]
        pair = [max(r["seconds"]) for r in same if r["processes"] == 2]
        fmt = lambda x, unit: "—" if x is None else f"{x:.{1 if unit == ' s' else 2}f}{unit}"  # noqa: E731
        rows.append(
            [
                LABELS.get(s["cpus"], s["cpus"]),
                named[s["run"]],
                fmt(s["lone_median_s"], " s"),
                ", ".join(f"{t:.1f}" for t in lone) or "—",
                fmt(s["concurrent_slowest_median_s"], " s"),
                ", ".join(f"{t:.1f}" for t in pair) or "—",
                fmt(s["concurrent_over_lone"], "×"),
                fmt(s["lone_over_unpinned_lone"], "×"),
            ]
        )
    out = table(
        [
            "placement",
            "benchmark run",
            "one run alone (median)",
            "runs",
            "two at once, slower run (median)",
            "runs",
            "two at once / alone",
            "alone / unpinned alone (same run)",
        ],
        rows,
    )
    return out + (
        f"\nThe N = 10 order-parameter cell (`benchmarks/sharing/cell.toml`: NUTS, 4 chains x (500 + 1000)), "
        f'warm compilation cache, {d["machine"]["cores"]} cores. Ratios within one benchmark run; "latest": '
        'the last benchmark run, "earlier": rows kept from a run with the package as it was then (`run.py --merge` '
        "reruns some rows only).\n"
    )
