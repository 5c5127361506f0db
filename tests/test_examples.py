"""Every script in examples/ runs end to end in its ``--smoke`` mode (tiny sizes)."""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import smoke_env

EXAMPLES = sorted(p for p in (Path(__file__).parent.parent / "examples").glob("*.py") if not p.name.startswith("_"))
#: Smoke runs of more than ~50 s on 2 busy cores (pytest --durations): in the slow set (``./run.sh test-all``),
#: so that the fast suite stays short.  Each still has a --smoke mode.
SLOW = {
    "digits_accuracy_vs_width.py",
    "learn_attention_digits.py",
    "finite_size_scaling.py",
    "potts_recovery_vs_M.py",
    "evidence_gap_vs_width.py",
    "learn_attention_markov.py",
    "potts_bayes.py",
    "digits_head_pruning.py",
    "sample_markov.py",
    "head_selection_markov.py",
    # the main job runs this one end to end; two theory-figure scripts of the same kind as markov_u_heatmaps
    "markov_accuracy_vs_width.py",
    "markov_kernel_alignment.py",
    "markov_path_kernels.py",
    "potts_gap_table.py",
    "potts_field_penalty.py",
}  # PT sampling + 4 fits; slow set so that the default suite does not grow
#: the longest of them, for the slow session's order (tests/conftest.py: pytest_collection_modifyitems)
SECONDS = {"potts_gap_table.py": 70, "learn_attention_digits.py": 50, "potts_recovery_vs_M.py": 45}
PARAMS = [
    pytest.param(p, id=p.name, marks=[pytest.mark.slow(seconds=SECONDS.get(p.name, 0))] if p.name in SLOW else [])
    for p in EXAMPLES
]


def test_slow_set_names_real_examples():
    assert SLOW <= {p.name for p in EXAMPLES}


@pytest.mark.parametrize("script", PARAMS)
def test_example_runs(script, tmp_path):
    assert "--smoke" in script.read_text(), f"{script.name} has no --smoke mode"
    env = smoke_env(MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    proc = subprocess.run(
        [sys.executable, str(script), "--smoke"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]


@pytest.mark.slow  # 22 s (a fit-attention compile); its example is in the slow set too
def test_learn_markov_write_cli_feeds_fit_attention(tmp_path, monkeypatch):
    """``learn_attention_markov.py --write-cli DIR`` writes the figure run's start (random qk heads, validation
    sequences, basis, network settings) as inputs that ``bayes-attn fit-attention`` accepts (docs/results.md §3.1)."""
    import json

    import numpy as np

    from bayes_attn.cli import main as cli
    from bayes_attn.tasks import load_bundle, markov_token_basis

    ex = Path(__file__).parent.parent / "examples"
    monkeypatch.syspath_prepend(str(ex))
    import learn_attention_markov as lam

    out = tmp_path / "cli"
    lam.main(
        ["--smoke", "--style", "qk", "--rank", "2", "--basis-pcs", "2", "--temperature", "0.1", "--write-cli", str(out)]
    )
    _, rnd = lam.random_heads_task(20, 20, lam.HEAD_SEEDS, style="qk", rank=2)
    task = load_bundle(out / "start.npz")
    for a, b in zip(task.layers, rnd.layers):  # the bundle holds the example's random heads, unchanged
        np.testing.assert_array_equal(a.params["Q"], b.params["Q"])
        np.testing.assert_array_equal(a.params["K"], b.params["K"])
    np.testing.assert_array_equal(task.x_train, rnd.x_train)
    np.testing.assert_array_equal(np.load(out / "basis.npy"), markov_token_basis(rnd.x_train, 2))
    assert np.load(out / "start.npz")["x_val"].shape[0] == 50
    assert (
        cli(
            [
                "fit-attention",
                str(out / "fit.toml"),
                "--basis",
                str(out / "basis.npy"),
                "--steps",
                "1",
                "--out",
                str(tmp_path / "l.npz"),
                "--no-progress",
            ]
        )
        == 0
    )
    s = json.loads((tmp_path / "l.json").read_text())
    assert s["settings"]["widths"] == [10, 10, 10] and s["settings"]["temperature"] == 0.1
    assert s["settings"]["rank"] == [2, 2] and s["settings"]["validation"] == 50
    assert len(s["log_evidence"]) == 2 and 0.0 <= s["test_accuracy_initial"] <= 1.0
