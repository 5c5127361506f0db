"""``bayes-attn potts sample|fit|replica`` file contract and bad input (exit 2, one line)."""

import json

import numpy as np
import pytest

import bayes_attn  # noqa: F401
from bayes_attn.cli import main

CFG = """[potts]
generator = "G1"
L = 4
C = 3
beta = 1.0
M = 60
n_val = 20
n_test = 40
rungs = 3
systems = 20
burn_sweeps = 20
thin = 2
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("potts")
    (d / "c.toml").write_text(CFG)
    assert main(["potts", "sample", str(d / "c.toml"), "--out", str(d / "data.npz")]) == 0
    return d


def test_sample_contract(data):
    z = np.load(data / "data.npz")
    assert z["sequences"].shape == (60, 4) and z["sequences"].dtype.kind == "i"
    assert z["val_sequences"].shape == (20, 4) and z["test_sequences"].shape == (40, 4)
    assert z["sequences"].min() >= 0 and z["sequences"].max() < 3
    assert z["J"].shape == (4, 4) and z["U"].shape == (3, 3) and float(z["beta"]) == 1.0
    assert "equilibration" in json.loads(str(z["info"]))


@pytest.mark.parametrize("model", ["factored", "plmdca"])
def test_fit_contract(data, model):
    out = data / f"fit_{model}.npz"
    assert main(["potts", "fit", str(data / "data.npz"), "--model", model, "--out", str(out), "--max-iter", "200"]) == 0
    f = np.load(out)
    assert f["couplings"].shape == (4, 4, 3, 3)
    if model == "factored":
        assert f["A"].shape == (1, 4, 4) and f["V"].shape == (1, 3, 3)
    rep = json.loads(out.with_suffix(".json").read_text())
    assert rep["nll_gap"] == pytest.approx(rep["test_nll"] - rep["nll_star"])


def test_fit_needs_only_sequences(data, tmp_path):
    s = np.load(data / "data.npz")["sequences"]
    np.savez(tmp_path / "only.npz", sequences=s)
    assert main(["potts", "fit", str(tmp_path / "only.npz"), "--out", str(tmp_path / "f.npz"), "--max-iter", "50"]) == 0
    rep = json.loads((tmp_path / "f.json").read_text())
    assert "nll_gap" not in rep and np.load(tmp_path / "f.npz")["couplings"].shape == (4, 4, 3, 3)


def _err(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    return err


def test_bad_input(tmp_path, capsys):
    (tmp_path / "bad.toml").write_text('[potts]\nLL = 3\n')
    assert "potts.LL: unknown key" in _err(capsys, ["potts", "sample", str(tmp_path / "bad.toml"), "--out", "x.npz"])
    (tmp_path / "neg.toml").write_text('[potts]\nL = -3\n')
    assert "potts.L:" in _err(capsys, ["potts", "sample", str(tmp_path / "neg.toml"), "--out", "x.npz"])
    np.savez(tmp_path / "nos.npz", J=np.eye(3))
    assert "no `sequences`" in _err(capsys, ["potts", "fit", str(tmp_path / "nos.npz"), "--out", "f.npz"])
    np.savez(tmp_path / "negs.npz", sequences=-np.ones((3, 3), int))
    assert "sequences: colours must be >= 0" in _err(capsys, ["potts", "fit", str(tmp_path / "negs.npz"), "--out",
                                                              "f.npz"])
    (tmp_path / "junk.npz").write_text("not a zip")
    assert "data: cannot read" in _err(capsys, ["potts", "fit", str(tmp_path / "junk.npz"), "--out", "f.npz"])
    assert "sites:" in _err(capsys, ["potts", "replica", "--out", "r.npz", "--L", "5", "--sites", "9"])


def test_replica_writes_curves(tmp_path):
    assert main(["potts", "replica", "--out", str(tmp_path / "r.npz"), "--plot", str(tmp_path / "r.png"), "--L", "30",
                 "--sites", "2", "--reps", "2", "--alphas", "0.5", "2", "--lam", "0.01"]) == 0
    r = np.load(tmp_path / "r.npz")
    assert r["theory"].shape[0] == 2 and r["simulation"].shape == (2, 2, 4) and (tmp_path / "r.png").stat().st_size > 0
