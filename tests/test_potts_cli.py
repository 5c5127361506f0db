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
consensus = 1.0
field_sigma = 0.3
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
    assert z["h"].shape == (4, 3) and z["consensus"].shape == (4,)
    # the consensus colour carries the largest field at every site (consensus 1.0 vs noise 0.3 N(0, 1)
    # could break this only by a > 3 sigma draw; the draw is seeded)
    np.testing.assert_array_equal(z["h"].argmax(1), z["consensus"])
    assert "equilibration" in json.loads(str(z["info"]))


@pytest.mark.parametrize("model", ["factored", "plmdca"])
def test_fit_contract(data, model):
    out = data / f"fit_{model}.npz"
    assert (
        main(
            [
                "potts",
                "fit",
                str(data / "data.npz"),
                "--model",
                model,
                "--out",
                str(out),
                "--max-iter",
                "200",
                "--fields",
                "--lam",
                "1e-3",
            ]
        )
        == 0
    )
    f = np.load(out)
    assert f["couplings"].shape == (4, 4, 3, 3) and f["fields"].shape == (4, 3)
    if model == "factored":
        assert f["A"].shape == (1, 4, 4) and f["V"].shape == (1, 3, 3)
    rep = json.loads(out.with_suffix(".json").read_text())
    assert rep["gap"] == pytest.approx(rep["test_nll"] - rep["nll_star"])
    assert rep["gauge"].startswith("zero-sum") and 0 <= rep["corr_h"] <= 1 and 0 <= rep["corr_K"] <= 1
    assert rep["fit"]["reason"] in ("gradient", "objective", "max_iter", "stalled")


def test_fit_scan_chooses_smallest_validation_pl(data):
    """Several --lam and --heads, fields auto: every combination is in the scan, the chosen one has
    the smallest validation PL, and the reported val_nll is that entry's."""
    out = data / "scan.npz"
    assert (
        main(
            [
                "potts",
                "fit",
                str(data / "data.npz"),
                "--out",
                str(out),
                "--lam",
                "1e-2",
                "1e-4",
                "--heads",
                "1",
                "2",
                "--max-iter",
                "100",
            ]
        )
        == 0
    )
    rep = json.loads(out.with_suffix(".json").read_text())
    combos = {(e["heads"], e["fields"], e["lam"]) for e in rep["scan"]}
    assert combos == {(h, f, lam) for h in (1, 2) for f in (False, True) for lam in (1e-2, 1e-4)}
    best = min(rep["scan"], key=lambda e: e["val_nll"])
    assert rep["chosen"] == {k: best[k] for k in ("heads", "fields", "lam")}
    assert rep["val_nll"] == pytest.approx(best["val_nll"], rel=1e-12)
    assert set(rep["fields_comparison"]) == {"with", "without"}
    f = np.load(out)
    assert f["A"].shape[0] == rep["chosen"]["heads"] and ("fields" in f.files) == rep["chosen"]["fields"]


def test_fit_needs_only_sequences(data, tmp_path):
    s = np.load(data / "data.npz")["sequences"]
    np.savez(tmp_path / "only.npz", sequences=s)
    assert (
        main(
            [
                "potts",
                "fit",
                str(tmp_path / "only.npz"),
                "--out",
                str(tmp_path / "f.npz"),
                "--max-iter",
                "50",
                "--lam",
                "1e-3",
                "--no-fields",
            ]
        )
        == 0
    )
    rep = json.loads((tmp_path / "f.json").read_text())
    assert "gap" not in rep and np.load(tmp_path / "f.npz")["couplings"].shape == (4, 4, 3, 3)


def _err(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    return err


def test_bad_input(tmp_path, capsys):
    (tmp_path / "bad.toml").write_text("[potts]\nLL = 3\n")
    assert "potts.LL: unknown key" in _err(capsys, ["potts", "sample", str(tmp_path / "bad.toml"), "--out", "x.npz"])
    (tmp_path / "neg.toml").write_text("[potts]\nL = -3\n")
    assert "potts.L:" in _err(capsys, ["potts", "sample", str(tmp_path / "neg.toml"), "--out", "x.npz"])
    np.savez(tmp_path / "nos.npz", J=np.eye(3))
    assert "no `sequences`" in _err(capsys, ["potts", "fit", str(tmp_path / "nos.npz"), "--out", "f.npz"])
    np.savez(tmp_path / "negs.npz", sequences=-np.ones((3, 3), int))
    assert "sequences: colours must be >= 0" in _err(
        capsys, ["potts", "fit", str(tmp_path / "negs.npz"), "--out", "f.npz"]
    )
    (tmp_path / "junk.npz").write_text("not a zip")
    assert "data: cannot read" in _err(capsys, ["potts", "fit", str(tmp_path / "junk.npz"), "--out", "f.npz"])
    assert "sites:" in _err(capsys, ["potts", "replica", "--out", "r.npz", "--L", "5", "--sites", "9"])


BAD_DATA = {
    "colour >= C": (np.array([[0, 1, 5], [1, 2, 0]]), ["--C", "3"], "sequences: colours must be < C = 3"),
    "non-integer": (np.array([[0, 1.5, 2], [1, 2, 0]]), [], "sequences: must be integer colours"),
    "NaN": (np.array([[0, np.nan, 2], [1, 2, 0]]), [], "sequences: contains NaN"),
    "rank 1": (np.array([0, 1, 2]), [], "sequences: must have 2 dimensions"),
    "rank 3": (np.zeros((2, 3, 2), int), [], "sequences: must have 2 dimensions"),
    "one sequence": (np.array([[0, 1, 2]]), [], "sequences: needs >= 2 sequences"),
    "strings": (np.array([["a", "b"], ["c", "d"]]), [], "sequences: must be integer colours"),
}


@pytest.mark.parametrize("case", list(BAD_DATA))
def test_fit_bad_sequences(tmp_path, capsys, case):
    s, extra, msg = BAD_DATA[case]
    np.savez(tmp_path / "d.npz", sequences=s)
    assert msg in _err(capsys, ["potts", "fit", str(tmp_path / "d.npz"), "--out", str(tmp_path / "f.npz"), *extra])


def test_fit_bad_options(data, tmp_path, capsys):
    d = str(data / "data.npz")
    f = str(tmp_path / "f.npz")
    assert "C: is 4 but DATA's U has shape (3, 3)" in _err(capsys, ["potts", "fit", d, "--out", f, "--C", "4"])
    np.savez(tmp_path / "v.npz", sequences=np.array([[0, 1], [1, 0]]), val_sequences=np.array([[0, 2]]))
    assert "val_sequences: colours must be < C = 2" in _err(
        capsys, ["potts", "fit", str(tmp_path / "v.npz"), "--out", f, "--C", "2"]
    )
    np.savez(tmp_path / "w.npz", sequences=np.array([[0, 1], [1, 0]]), test_sequences=np.array([[0, 1, 1]]))
    assert "test_sequences: must have 2 columns" in _err(capsys, ["potts", "fit", str(tmp_path / "w.npz"), "--out", f])
    assert "fields: the transformer has no per-site fields" in _err(
        capsys, ["potts", "fit", d, "--out", f, "--model", "transformer", "--fields"]
    )
    assert "fields: plmDCA always fits fields" in _err(
        capsys, ["potts", "fit", d, "--out", f, "--model", "plmdca", "--no-fields"]
    )
    assert "lam: must be >= 0" in _err(capsys, ["potts", "fit", d, "--out", f, "--lam", "-0.001"])
    # the library (FitSettings) checks --lam, for every model that takes one; the transformer takes none
    assert _err(capsys, ["potts", "fit", d, "--out", f, "--lam", "1e-3", "nan"]).startswith("error: lam: must be >= 0")
    assert "lam: must be >= 0" in _err(capsys, ["potts", "fit", d, "--out", f, "--model", "plmdca", "--lam", "-1"])
    assert "lam: the transformer has no L2 weight" in _err(
        capsys, ["potts", "fit", d, "--out", f, "--model", "transformer", "--lam", "-1"]
    )
    assert "heads: must be > 0, got 0" in _err(capsys, ["potts", "fit", d, "--out", f, "--heads", "0"])
    assert "heads: must be > 0, got -2" in _err(capsys, ["potts", "fit", d, "--out", f, "--heads", "1", "-2"])
    assert "C: must be > 0" in _err(capsys, ["potts", "fit", d, "--out", f, "--C", "-3"])
    assert not (tmp_path / "f.npz").exists()


def test_default_lambda_grid_is_walked_down_until_validation_rises(data, tmp_path):
    """No --lam: the LAM_GRID path (per fields setting) goes from the largest lambda down and stops at the
    first rise of the validation PL, or runs to the grid's end; the chosen entry is the scan's minimum."""
    from bayes_attn.potts import LAM_FIELDS, LAM_GRID

    out = tmp_path / "grid.npz"
    assert main(["potts", "fit", str(data / "data.npz"), "--out", str(out), "--max-iter", "200"]) == 0
    rep = json.loads(out.with_suffix(".json").read_text())
    for f in (False, True):
        path = [e for e in rep["scan"] if e["fields"] == f]
        lams = [e["lam"] for e in path]
        assert lams == list(LAM_GRID[: len(lams)])
        vals = [e["val_nll"] for e in path]
        assert all(b <= a for a, b in zip(vals[:-2], vals[1:-1]))  # no rise before the last step
        assert len(path) == len(LAM_GRID) or vals[-1] > vals[-2]
        assert all(e.get("lam_fields") == (LAM_FIELDS if f else None) for e in path)
    best = min(rep["scan"], key=lambda e: e["val_nll"])
    assert rep["chosen"] == {k: best[k] for k in ("heads", "fields", "lam")}


def test_lam_fields_option(data, tmp_path, capsys):
    d, f = str(data / "data.npz"), str(tmp_path / "f.npz")
    assert (
        main(["potts", "fit", d, "--out", f, "--fields", "--lam", "1e-3", "--lam-fields", "0.01", "--max-iter", "200"])
        == 0
    )
    rep = json.loads((tmp_path / "f.json").read_text())
    assert rep["scan"][0]["lam_fields"] == 0.01
    assert "lam-fields: must be >= 0" in _err(capsys, ["potts", "fit", d, "--out", f, "--lam-fields", "-1"])
    assert "lam-fields: only factored and softmax" in _err(
        capsys, ["potts", "fit", d, "--out", f, "--model", "plmdca", "--lam-fields", "1e-5"]
    )
    assert "lam-fields: given with --no-fields" in _err(
        capsys, ["potts", "fit", d, "--out", f, "--no-fields", "--lam-fields", "1e-5"]
    )
