"""Time of the sequence reweighting on alignment-sized inputs (benchmarks/potts_proteins/weights.json, written
by benchmarks/potts_proteins/weights.py): first call (compilation included) and, where run, a second call."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, table  # noqa: E402


def render() -> str:
    d = load("benchmarks/potts_proteins/weights.json", "benchmarks/potts_proteins/weights.py")
    rows = [
        [f"{r['M']:,}", r["L"], f"{r['first_s']:.1f} s", "—" if r["second_s"] is None else f"{r['second_s']:.1f} s"]
        for r in d["rows"]
    ]
    out = table(["sequences M", "columns L", "first call (compilation included)", "second call"], rows)
    return out + f"\nRandom sequences over 21 states, θ = 0.8, blocks of 256 rows, {d['cores']} CPU cores, no GPU.\n"
