"""docs/potts_proteins.md: time and peak memory of ``potts fit`` against the family's length (tiled real
families), with the fit's own memory estimate, and freecontact where it ran.

Reads benchmarks/potts_scale/results.json (benchmarks/potts_scale/run.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, table  # noqa: E402


def render() -> str:
    d = load("benchmarks/potts_scale/results.json", "benchmarks/potts_scale/run.py")
    rows = []
    for r in sorted(d["rows"].values(), key=lambda r: (r["model"], r["L"], r.get("max_iter", 0))):
        fit = r.get("fit")
        if r["model"] == "freecontact":
            how, its, est = "mfDCA", "—", "—"
        else:
            how = f"blocks of {r['site_block']} sites" if r.get("site_block") else "all sites at once"
            bound = f" (bounded at {r['max_iter']})" if r.get("bounded") else ""
            its = f"{fit['iterations']}, {fit['reason']}{bound}"
            est = f"{r['memory_estimate_mb'] / 1e3:.1f} GB"
        rows.append(
            [
                f"{r['family']} × {r['tiles']}",
                str(r["L"]),
                str(r["M"]),
                r["model"],
                how,
                its,
                f"{r['seconds']:.0f} s",
                f"{r['peak_rss_mb'] / 1e3:.2f} GB",
                est,
            ]
        )
    head = ["family", "L", "M", "model", "route", "iterations", "wall", "peak memory", "estimate"]
    return (
        table(head, rows)
        + f"\nWhole `potts fit` commands with their defaults, {d['machine']['cores']} cores, one job at a time; "
        "a bounded row stopped at the iteration budget it names (each block of sites at that budget).\n"
    )
