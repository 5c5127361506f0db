"""Every script in examples/ runs end to end in its ``--smoke`` mode (tiny sizes)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted(p for p in (Path(__file__).parent.parent / "examples").glob("*.py") if not p.name.startswith("_"))
#: Smoke runs of more than ~50 s on 2 busy cores (measured 2026-11-30, pytest --durations): in the slow set
#: (``./run.sh test-all``), so that the default suite stays under 15 minutes.  Each still has a --smoke mode.
SLOW = {"digits_accuracy_vs_width.py", "learn_attention_digits.py", "finite_size_scaling.py",
        "potts_recovery_vs_M.py", "evidence_gap_vs_width.py", "learn_attention_markov.py", "potts_bayes.py",
        "digits_head_pruning.py", "sample_markov.py", "head_selection_markov.py",
        # the main job runs this one end to end; two theory-figure scripts of the same kind as markov_u_heatmaps
        "markov_accuracy_vs_width.py", "markov_kernel_alignment.py", "markov_path_kernels.py",
        "potts_gap_table.py",  # 60 s (2026-12-01)
        "potts_field_penalty.py"}  # PT sampling + 4 fits; slow set so that the default suite does not grow
PARAMS = [pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.name in SLOW else []) for p in EXAMPLES]


def test_slow_set_names_real_examples():
    assert SLOW <= {p.name for p in EXAMPLES}


@pytest.mark.parametrize("script", PARAMS)
def test_example_runs(script, tmp_path):
    assert "--smoke" in script.read_text(), f"{script.name} has no --smoke mode"
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, str(script), "--smoke"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
