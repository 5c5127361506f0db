"""Table: attention learned by evidence on the Markov 4-path task vs hand-built and random heads
(docs/results.md §3.1).  Reads docs/figures/learn_markov.json (examples/learn_attention_markov.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _evidence_common import learned_markov_table  # noqa: E402


def render() -> str:
    return learned_markov_table("learn_markov.json")
