"""docs/theory_solver.md: the solver timings on a shared machine (load average ~30).

Reads benchmarks/theory/results_markov.json (benchmarks/theory/run.py on 2 cores shared with other jobs).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load  # noqa: E402
from theory_solver_bench import rows  # noqa: E402


def render() -> str:
    d = load("benchmarks/theory/results_markov.json", "benchmarks/theory/run.py")
    return rows(d, hessian=True)
