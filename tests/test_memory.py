"""bayes_attn._memory: a job too big for memory is refused before it starts, with one line naming the field."""

import resource

import numpy as np
import pytest

from bayes_attn import InputError, _memory
from bayes_attn.cli import main
from bayes_attn.tasks import markov_task
from bayes_attn.tasks._markov import markov_memory


def test_available_memory_is_read_and_the_check_refuses_beyond_it(monkeypatch):
    have = _memory.available_bytes()
    assert have is not None and have > 0
    _memory.require_memory(have / 2, "data.P", "half of it")
    with pytest.raises(InputError, match=r"^data\.P: twice .* needs about .* GB of memory, .* GB is available$"):
        _memory.require_memory(2 * have, "data.P", "twice it")
    monkeypatch.setattr(_memory, "available_bytes", lambda: None)  # a system that does not say: no refusal
    _memory.require_memory(1e30, "data.P", "anything")


def test_the_markov_estimate_covers_what_the_task_holds():
    task = markov_task(P=600, n_test=40)
    spec = task.spec(width=10, temperature=0.01)
    held = sum(a.nbytes for a in (task.x_train, task.x_test)) + 2 * sum(
        np.asarray(task.phi(s, spec)).nbytes for s in ("train", "test")
    )
    assert held <= markov_memory(600, 40, 4) - 1.2e9 + 1  # the arrays, before the block allowance


def test_a_task_too_big_is_refused_before_anything_is_allocated(monkeypatch):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    monkeypatch.setattr(_memory, "available_bytes", lambda: int(2e9))
    with pytest.raises(InputError, match=r"^data\.P: the Markov task at P = 100000"):
        markov_task(P=100_000, n_test=10)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KB: nothing of 5.7 GB was made


def test_the_command_exits_2_with_one_line(tmp_path, capsys):
    cfg = tmp_path / "huge.toml"
    cfg.write_text('[data]\ntask = "markov"\nP = 10000000\nn_test = 100\n[network]\nwidth = 10\ntemperature = 0.01\n')
    out = tmp_path / "t.nc"
    assert main(["theory", str(cfg), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "data.P" in err[0] and "GB" in err[0] and not out.exists()
