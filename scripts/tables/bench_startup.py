"""`bayes-attn theory` on three widths end to end, cold and warm, with and without the traced programs kept on
disk (benchmarks/startup/results.json, written by benchmarks/startup/run.py)."""

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, table  # noqa: E402


def _cell(times: list[float]) -> str:
    return f"{statistics.median(times):.1f} s ({min(times):.1f}–{max(times):.1f})"


def render() -> str:
    d = load("benchmarks/startup/results.json", "benchmarks/startup/run.py")
    rows = [
        [label, _cell(d["times_s"][v]["cold"]), _cell(d["times_s"][v]["warm"])] for v, label in d["variants"].items()
    ]
    rows.append(["the authors' PyTorch solver (reference)", f"{d['authors_cold_s']:.1f} s", "—"])
    n = len(d["times_s"]["disk"]["cold"])
    return (
        table(["`bayes-attn theory`, 3 widths", "cold: median (min–max)", "warm: median (min–max)"], rows)
        + f"\n{d['command']}; {n} runs per cell, the variants alternating, each process pinned to one core of the "
        f"{d['cpu_count']}-core machine ({d['machine']}). Cold: an empty cache folder; warm: one filled by an "
        "earlier run.\n"
    )
