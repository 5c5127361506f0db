"""docs/samplers.md: the gates table with 500 draws per chain (the default on the order parameters is 1000).

Reads docs/figures/gates_markov4_draws500.json (scripts/gates.py --config configs/gates_markov4_draws500.toml).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import gates_markov4  # noqa: E402


def render() -> str:
    return gates_markov4.render("gates_markov4_draws500.json")
