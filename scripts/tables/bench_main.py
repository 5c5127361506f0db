"""The main job end to end, cold and warm compilation cache (benchmarks/main/results.json, written by
benchmarks/main/run.py)."""

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, table  # noqa: E402


def _span(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} s ({min(values):.0f}–{max(values):.0f})"


def render() -> str:
    d = load("benchmarks/main/results.json", "benchmarks/main/run.py")
    rows = []
    for mode, label in (("cold", "cold: empty compilation cache"), ("warm", "warm: the cache of the cold run")):
        runs = [r for r in d["runs"] if r["mode"] == mode]
        first = [max(c["compile_s"] for c in r["cells"].values()) for r in runs]
        rows.append(
            [
                label,
                _span([r["wall_s"] for r in runs]),
                _span([r["sweep_s"] for r in runs]),
                _span(first),
                f"{min(r['passes'] for r in runs)} of 8",
            ]
        )
    n = len(d["runs"]) // 2
    same = (
        "the same sampled accuracies in every run"
        if d["same_outputs"]
        else "**sampled accuracies differ between runs**"
    )
    return (
        table(
            [
                "`./run.sh main` after the install",
                "end to end: median (min–max)",
                "its sweep",
                "largest cell `compile_s`",
                "PASS verdicts",
            ],
            rows,
        )
        + f"\n{d['command']} (`benchmarks/main/run.py`); {n} cold + warm pairs, cold and warm alternating, on the idle "
        f"{d['cpu_count']}-core machine ({d['machine']}); {same}.\n"
    )
