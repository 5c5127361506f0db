"""docs/design.md "Several JAX processes on few cores": pinned vs unpinned processes.

Reads benchmarks/sweep/pinning.json (benchmarks/sweep/pinning.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, table  # noqa: E402


def render() -> str:
    d = load("benchmarks/sweep/pinning.json", "benchmarks/sweep/pinning.py")
    if d["meta"]["smoke"]:
        raise SystemExit("benchmarks/sweep/pinning.json is a --smoke run; rerun the full benchmark")
    rows = [
        [
            f"`{r['xla_flags']}`" if r["xla_flags"] else "(empty)",
            "pinned, one core each" if r["pinned"] else "unpinned",
            r["processes"],
            f"{r['loop_s_median']:.2f} s",
            ", ".join(f"{t:.2f}" for t in r["loop_s_runs"]) + " s",
            f"{r['slowdown_vs_one_alone_unpinned']:.1f}×",
        ]
        for r in d["rows"]
    ]
    m = d["meta"]
    return (
        table(
            [
                "XLA_FLAGS",
                "placement",
                "processes at once",
                f"{m['calls']} calls, median per process",
                "runs",
                "time / one unpinned process alone",
            ],
            rows,
        )
        + f"\n{m['repeats']} repeats, {m['cores']} cores.\n"
    )
