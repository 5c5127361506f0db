"""Table: attention learned by evidence on the Markov 4-path task from random heads, reading only the positional code
and two whitened principal directions of the content (docs/results.md §3.1).  Reads docs/figures/learn_markov_basis.json
(examples/learn_attention_markov.py --basis-pcs 2 --tag _basis)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _evidence_common import learned_markov_table  # noqa: E402


def render() -> str:
    return learned_markov_table("learn_markov_basis.json")
