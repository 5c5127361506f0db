"""docs/design.md "Several JAX processes on few cores": NumPy's BLAS in a pinned process.

Reads benchmarks/sweep/blas_pinned.json (benchmarks/sweep/blas_pinned.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, table  # noqa: E402

LABEL = {
    "unpinned": "unpinned",
    "pinned_no_limit": "pinned to one core, BLAS threads as started",
    "pinned_one_thread": "pinned to one core, one BLAS thread (`pin_to_one_core` default)",
}


def render() -> str:
    d = load("benchmarks/sweep/blas_pinned.json", "benchmarks/sweep/blas_pinned.py")
    if d["meta"]["smoke"]:
        raise SystemExit("benchmarks/sweep/blas_pinned.json is a --smoke run; rerun the full benchmark")
    m = d["meta"]
    rows = [
        [
            LABEL[r["mode"]],
            r["blas_threads"],
            f"{r['matmul_s_median']:.3f} s",
            f"{r['matmul_vs_unpinned']:.1f}×",
            f"{r['cholesky_s_median']:.3f} s",
            f"{r['cholesky_vs_unpinned']:.1f}×",
        ]
        for r in d["rows"]
    ]
    return (
        table(
            [
                "process",
                "BLAS threads",
                f"({m['sequences']}, 30, 200) @ (200, 200)",
                "/ unpinned",
                "1500 × 1500 Cholesky",
                "/ unpinned",
            ],
            rows,
        )
        + f"\nMedian of {m['repeats']} processes per row, {m['cores']} cores.\n"
    )
