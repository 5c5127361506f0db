"""CLI end to end on a tiny config, and every bad-input case: one line naming the field, exit 2."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bayes_attn import InputError
from bayes_attn.cli import main
from bayes_attn.inference import load_config
from bayes_attn.tasks import load_bundle
from conftest import random_task

TINY = """
[data]
{data}
[network]
width = {width}
readout = "{readout}"
temperature = {temperature}
variances = {variances}
[model]
kind = "{model}"
[sampler]
kind = "{kind}"
chains = 2
warmup = 40
draws = 40
seed = 1
progress_bar = false
"""

MARKOV = 'task = "markov"\nP = 10\nn_test = 6\npaths = 4'


def write_cfg(tmp_path, name="cfg.toml", **kw):
    fields = dict(
        data=MARKOV,
        width=3,
        readout="last",
        temperature=0.1,
        variances="[1.0, 1.0, 1.0, 1.0]",
        kind="nuts",
        model="collapsed",
    )
    fields.update(kw)
    p = tmp_path / name
    p.write_text(TINY.format(**fields))
    return p


def run_cli(args, capsys):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("model", ["collapsed", "weights"])
def test_sample_and_diagnose_end_to_end(tmp_path, capsys, monkeypatch, model):
    import bayes_attn.inference as inference

    asked = []
    monkeypatch.setattr(inference, "request_host_devices", asked.append)
    cfg = write_cfg(tmp_path, model=model)
    out = tmp_path / "run.nc"
    code, stdout, _ = run_cli(["sample", cfg, "--out", out, "--no-progress"], capsys)
    assert code == 0 and out.is_file()
    assert asked == []  # two chains, vectorized on one device: no host devices asked for
    # 2 x 40 draws cannot reach the default bulk/tail ESS gate of 400: the printed verdict is FAIL, with the reason
    assert "divergences" in stdout and "FAIL" in stdout and "PASS" not in stdout and "ESS" in stdout.split("FAIL")[1]
    from bayes_attn.inference import read_run

    dt = read_run(out)
    post = dt["posterior"].ds
    assert post["f"].shape == (2, 40, 6) and post["U"].shape == (2, 40, 4, 4)
    assert list(post["U"].path.values) == ["good,unif", "good,rand", "rand,unif", "rand,rand"]
    assert "z_V0" not in post and "V1" not in post  # weights only on request
    assert ("f_var" in post) == (model == "collapsed")
    assert 'task = "markov"' in dt.attrs["config"] and "numpyro" in dt.attrs["package_versions"]
    assert set(dt["sample_stats"].ds) >= {"diverging", "energy", "tree_depth", "acceptance_rate"}
    code, stdout, _ = run_cli(["diagnose", out], capsys)
    assert code == 0 and "R-hat" in stdout
    # 80 draws cannot reach ESS 400: --strict fails
    code, stdout, _ = run_cli(["diagnose", out, "--strict"], capsys)
    assert code == 1 and "FAIL" in stdout
    # several runs in one process: each under its header, the same report as alone
    code, alone, _ = run_cli(["diagnose", out], capsys)
    code, both, _ = run_cli(["diagnose", out, out, "--strict"], capsys)
    assert code == 1 and both == f"== {out}\n{alone}== {out}\n{alone}"


def test_store_weights_and_bundle_roundtrip(tmp_path, capsys):
    task = random_task(P=6, Q=3, S=3, n0=4, heads=(2, 1))
    from bayes_attn.tasks import save_bundle

    save_bundle(task, tmp_path / "b.npz")
    t2 = load_bundle(tmp_path / "b.npz")
    np.testing.assert_allclose(t2.path_inputs("test", "mean"), task.path_inputs("test", "mean"), rtol=1e-12)
    p = tmp_path / "cfg.toml"
    p.write_text(
        TINY.format(
            data='file = "b.npz"',
            width=3,
            readout="mean",
            temperature=0.5,
            variances="[1.0, 1.0, 1.0, 1.0]",
            kind="nuts",
            model="weights",
        ).replace("progress_bar = false", "progress_bar = false\nstore_weights = true")
    )
    code, _, _ = run_cli(["sample", p, "--out", tmp_path / "r.nc", "--quiet"], capsys)
    assert code == 0
    from bayes_attn.inference import read_run

    post = read_run(tmp_path / "r.nc")["posterior"].ds
    assert post["V0"].shape == (2, 40, 3, 4) and post["V1"].shape == (2, 40, 2, 3, 3) and post["a"].shape == (2, 40, 3)


def _bundle(tmp_path, **override):
    task = random_task(P=4, Q=3, S=3, n0=2, heads=(2,))
    d = task.to_npz_dict()
    d.update(override)
    d = {k: v for k, v in d.items() if v is not None}
    np.savez(tmp_path / "b.npz", **d)
    return 'file = "b.npz"'


BAD = {
    "missing key": (dict(), "network.temperature", lambda t: t.replace("temperature = 0.1\n", "")),
    "missing data table": (dict(), "data", lambda t: t[t.index("[network]") :]),
    "misspelt table": (dict(), "config.dat", lambda t: t.replace("[sampler]", "[dat]\n[sampler]")),
    "zero width": (dict(width=0), "network.width", None),
    "negative width list": (dict(width="[10, -3]"), "network.width", None),
    "zero temperature": (dict(temperature=0), "network.temperature", None),
    "negative variance": (dict(variances="[1.0, -1.0, 1.0, 1.0]"), "network.variances", None),
    "wrong number of variances": (dict(variances="[1.0, 1.0]"), "network.variances", None),
    "unknown readout": (dict(readout="middle"), "network.readout", None),
    "unknown head": (dict(data=MARKOV + '\nheads = [["good", "evil"], ["unif"]]'), "data.heads[0][1]", None),
    "unknown sampler": (dict(kind="hmc2"), "sampler.kind", None),
    "attention weights in the GP limit": (
        dict(model="attention_weights"),
        "model.limit",
        lambda t: t.replace("[sampler]", 'rank = 1\nlimit = "gp"\n[sampler]'),
    ),
    "attention option of another model": (
        dict(),
        "model.rank",
        lambda t: t.replace("[sampler]", "rank = 1\n[sampler]"),
    ),
    "unknown key": (dict(), "sampler.chain", lambda t: t.replace("chains = 2", "chain = 2")),
    "odd P": (dict(data='task = "markov"\nP = 7'), "data.P", None),
    "missing data file": (dict(data='file = "nope.npz"'), "data.file", None),
    "not toml": (dict(), "config", lambda t: t + "\n[[[broken"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_config(tmp_path, capsys, case):
    kw, field, edit = BAD[case]
    p = write_cfg(tmp_path, **kw)
    if edit:
        p.write_text(edit(p.read_text()))
    code, _, err = run_cli(["sample", p, "--out", tmp_path / "r.nc"], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}"), err
    assert not (tmp_path / "r.nc").exists()
    # the Python API raises a ValueError with the same text
    with pytest.raises(ValueError) as exc:
        cfg = load_config(p)
        cfg.spec(cfg.task())
    assert f"error: {exc.value}" == lines[0]


BAD_BUNDLE = {
    "wrong shape": (dict(x_test=np.zeros((3, 4, 2))), "data.x_test"),
    "wrong dtype": (dict(y_train=np.array(["a", "b", "c", "d"])), "data.y_train"),
    "nan in data": (dict(x_train=np.full((4, 3, 2), np.nan)), "data.x_train"),
    "inf in labels": (dict(y_test=np.array([1.0, np.inf, 1.0])), "data.y_test"),
    "labels wrong length": (dict(y_train=np.ones(3)), "data.y_train"),
    "missing array": (dict(x_test=None), "data.x_test"),
    "attention wrong N0": (dict(W_1=np.zeros((2, 5, 5))), "attention.W"),
}


@pytest.mark.parametrize("case", list(BAD_BUNDLE))
def test_bad_bundle(tmp_path, capsys, case):
    override, field = BAD_BUNDLE[case]
    p = write_cfg(tmp_path, data=_bundle(tmp_path, **override), variances="[1.0, 1.0, 1.0]")
    code, _, err = run_cli(["sample", p, "--out", tmp_path / "r.nc"], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}"), err
    with pytest.raises(InputError):
        load_bundle(tmp_path / "b.npz")


def test_unreadable_files(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    p = write_cfg(tmp_path, data='file = "bad.npz"')
    code, _, err = run_cli(["sample", p, "--out", tmp_path / "r.nc"], capsys)
    assert code == 2 and err.startswith("error: data.file")
    (tmp_path / "run.nc").write_text("garbage")
    code, _, err = run_cli(["diagnose", tmp_path / "run.nc"], capsys)
    assert code == 2 and err.startswith("error: run") and len(err.strip().splitlines()) == 1
    # a bad file among several: the same one line, before any report is printed
    (tmp_path / "missing.nc").unlink(missing_ok=True)
    code, out, err = run_cli(["diagnose", tmp_path / "missing.nc", tmp_path / "run.nc"], capsys)
    assert code == 2 and out == "" and err.startswith("error: run") and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(["sample", tmp_path / "missing.toml", "--out", "x.nc"], capsys)
    assert code == 2 and err.startswith("error: config")


def test_console_script_no_traceback(tmp_path):
    p = write_cfg(tmp_path, temperature=-1)
    exe = Path(sys.executable).parent / "bayes-attn"
    proc = subprocess.run([str(exe), "sample", str(p), "--out", str(tmp_path / "r.nc")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: network.temperature: must be > 0, got -1"
    assert "Traceback" not in proc.stderr


def test_console_script_deprecated_spelling_is_one_warning_line(tmp_path):
    """``[sampler] kind = "wishart"`` still reads, with one ``warning:`` line naming the canonical spelling."""
    p = write_cfg(tmp_path, temperature=-1)
    text = p.read_text()
    p.write_text(
        text[: text.index("[model]")] + text[text.index("[sampler]") :].replace('kind = "nuts"', 'kind = "wishart"')
    )
    exe = Path(sys.executable).parent / "bayes-attn"
    proc = subprocess.run([str(exe), "sample", str(p), "--out", str(tmp_path / "r.nc")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        'warning: sampler.kind = "wishart" is deprecated; use model="order_parameters" '
        '(in TOML: [model] kind = "order_parameters")',
        "error: network.temperature: must be > 0, got -1",
    ]
