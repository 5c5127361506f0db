"""Where the whole suite's time goes, the slow set included (benchmarks/suite/results_all.json, written by
``benchmarks/suite/run.py --all --out benchmarks/suite/results_all.json``): the table of :mod:`bench_suite`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_suite import render_file  # noqa: E402


def render() -> str:
    return render_file(
        "benchmarks/suite/results_all.json", "benchmarks/suite/run.py --all --out benchmarks/suite/results_all.json"
    )
