"""docs/samplers.md: the gates table with the centred sites of version 0.1.0 (before the non-centred sites).

Reads docs/figures/gates_markov4_centred.json (scripts/gates.py at version 0.1.0, kept as written).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import gates_markov4  # noqa: E402


def render() -> str:
    return gates_markov4.render("gates_markov4_centred.json")
