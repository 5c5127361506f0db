"""``bayes-attn potts fit ALIGNMENT`` and ``potts contacts``: the file contract end to end, and bad input
(one line naming the file or option, exit 2, nothing written)."""

import csv
import json

import numpy as np
import pytest

from bayes_attn.cli import main
from protein_fixtures import FOCUS, write_formats, write_pdb

pytest.importorskip("Bio.PDB")


@pytest.fixture(scope="module")
def fam(tmp_path_factory):
    d = tmp_path_factory.mktemp("protein")
    paths = write_formats(d, M=80)
    write_pdb(d / "toy.pdb")
    return d, paths


@pytest.mark.parametrize("model, extra", [("plmdca", []), ("factored", ["--heads", "6"])])
def test_fit_alignment_then_contacts(fam, model, extra, capsys):
    d, paths = fam
    fit = d / f"{model}.npz"
    assert (
        main(
            [
                "potts",
                "fit",
                str(paths["a3m"]),
                "--focus",
                "focus",
                "--model",
                model,
                "--out",
                str(fit),
                "--max-iter",
                "60",
                *extra,
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "M_eff" in out and "iteration" in out
    z = np.load(fit)
    assert z["couplings"].shape == (20, 20, 21, 21) and z["fields"].shape == (20, 21)
    assert str(z["alphabet"]) == "-ACDEFGHIKLMNPQRSTVWY" and str(z["focus_id"]) == "focus/101-120"
    assert str(z["focus_sequence"]) == FOCUS and list(z["residues"]) == list(range(101, 121))
    assert 1 <= float(z["M_eff"]) <= 80 and z["weights"].shape == (80,)
    rep = json.loads((d / f"{model}.json").read_text())
    assert rep["M_eff"] == pytest.approx(float(z["M_eff"])) and rep["fit"]["iterations"] <= 60
    if model == "factored":
        assert z["A"].shape == (6, 20, 20) and z["V"].shape == (6, 21, 21)
    scores = d / f"{model}.csv"
    assert (
        main(
            [
                "potts",
                "contacts",
                str(fit),
                "--out",
                str(scores),
                "--structure",
                str(d / "toy.pdb"),
                "--chain",
                "A",
                "--plot",
                str(d / f"{model}.png"),
            ]
        )
        == 0
    )
    rows = list(csv.DictReader(scores.open()))
    assert len(rows) == 190 and rows[0]["rank"] == "1" and 101 <= int(rows[0]["i"]) < int(rows[0]["j"]) <= 120
    assert float(rows[0]["score"]) >= float(rows[-1]["score"])
    assert sum(r["contact"] == "1" for r in rows) == 5  # the structure's five contacts
    crep = json.loads(scores.with_suffix(".json").read_text())
    assert crep["structure"]["unresolved"] == 1 and set(crep["precision"]["cuts"]) == {"L/10", "L/5", "L/2", "L"}
    assert (d / f"{model}.png").stat().st_size > 1000


def test_scan_refits_on_all_sequences(fam, capsys):
    d, paths = fam
    fit = d / "scan.npz"
    assert (
        main(
            [
                "potts",
                "fit",
                str(paths["fasta"]),
                "--focus",
                "focus",
                "--model",
                "plmdca",
                "--lam",
                "1e-2",
                "1e-3",
                "--max-iter",
                "40",
                "--out",
                str(fit),
            ]
        )
        == 0
    )
    rep = json.loads(fit.with_suffix(".json").read_text())
    assert len(rep["scan"]["entries"]) == 2 and rep["scan"]["n_train"] + rep["scan"]["n_val"] <= 80
    assert rep["chosen"]["lam"] == min(rep["scan"]["entries"], key=lambda e: e["val_nll"])["lam"]
    assert "validation scan over 2 candidates" in capsys.readouterr().out


def _fit(paths, out, *args):
    """``potts fit`` of the toy family's FASTA; asserts success."""
    assert main(["potts", "fit", str(paths["fasta"]), *args, "--out", str(out)]) == 0


def _bad(tmp_path, capsys, argv, match):
    out = tmp_path / "out.npz"
    code = main([a.replace("OUT", str(out)) for a in argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and match in err, err
    assert not out.exists() and not out.with_suffix(".json").exists()


@pytest.mark.parametrize(
    "text, match",
    [
        (">a\nACDE\n>b\nACD\n", "rows of unequal length"),
        ("", "has no sequences"),
        (">a\nAC1E\n>b\nACDE\n", "unknown alignment characters"),
    ],
)
def test_bad_alignment_files(tmp_path, capsys, text, match):
    p = tmp_path / "bad.fasta"
    p.write_text(text)
    _bad(tmp_path, capsys, ["potts", "fit", str(p), "--out", "OUT"], f"bad.fasta: {match}")


def test_bad_fit_options(fam, tmp_path, capsys):
    _, paths = fam
    a = str(paths["fasta"])
    _bad(tmp_path, capsys, ["potts", "fit", a, "--focus", "nope", "--out", "OUT"], "focus: no sequence 'nope'")
    _bad(tmp_path, capsys, ["potts", "fit", a, "--alphabet", "rna", "--out", "OUT"], "alphabet:")
    for theta in ("0", "1.5", "-0.2"):
        _bad(tmp_path, capsys, ["potts", "fit", a, "--theta", theta, "--out", "OUT"], "theta: must be in (0, 1]")
    _bad(tmp_path, capsys, ["potts", "fit", a, "--model", "transformer", "--out", "OUT"], "model:")
    _bad(tmp_path, capsys, ["potts", "fit", str(tmp_path / "none.fasta"), "--out", "OUT"], "file not found")


def test_a_fit_over_the_memory_budget_is_refused_before_it_starts(fam, tmp_path, capsys):
    _, paths = fam
    a = str(paths["fasta"])
    for model in ("plmdca", "factored"):
        _bad(
            tmp_path,
            capsys,
            ["potts", "fit", a, "--model", model, "--max-memory", "0.3", "--out", "OUT"],
            "max-memory:",
        )
    _bad(tmp_path, capsys, ["potts", "fit", a, "--max-memory", "0", "--out", "OUT"], "max-memory: must be > 0")


def test_the_fit_prints_its_estimate_and_plmdca_takes_blocks_of_sites_that_fit_the_budget(fam, tmp_path, capsys):
    from bayes_attn.potts import plm_memory

    _, paths = fam
    whole = plm_memory(20, 21, 80)
    budget = (plm_memory(20, 21, 80, site_block=5) + 1e6) / 1e9  # room for 5 sites, not for the joint fit
    assert whole > budget * 1e9
    fit = tmp_path / "b.npz"
    _fit(paths, fit, "--model", "plmdca", "--max-iter", "20", "--max-memory", f"{budget:.6f}")
    out = capsys.readouterr().out
    assert "estimated peak memory" in out and "4 blocks of about 5 sites" in out and "sites fitted: 20 of 20" in out, (
        out
    )
    rep = json.loads(fit.with_suffix(".json").read_text())
    assert rep["settings"]["site_block"] == 5 and rep["memory_estimate_bytes"] <= rep["memory_budget_bytes"]


def test_bad_contacts_input(fam, tmp_path, capsys):
    d, paths = fam
    fit, nofocus = tmp_path / "f.npz", tmp_path / "nf.npz"
    _fit(paths, fit, "--focus", "focus", "--model", "plmdca", "--max-iter", "5")
    _fit(paths, nofocus, "--model", "plmdca", "--max-iter", "5")
    capsys.readouterr()
    cases = [
        ([str(fit), "--structure", str(d / "toy.pdb"), "--chain", "Q"], "chain: 'Q' is not in toy.pdb"),
        ([str(nofocus), "--structure", str(d / "toy.pdb")], "has no focus sequence"),
        ([str(fit), "--structure", str(d / "toy.pdb"), "--chain", "B"], "does not align to the focus sequence"),
        ([str(tmp_path / "missing.npz")], "fit: file not found"),
    ]
    for args, match in cases:
        out = tmp_path / "s.csv"
        code = main(["potts", "contacts", *args, "--out", str(out)])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and match in err, err
        assert not out.exists()


def test_factored_from_a_plmdca_fit(fam, tmp_path, capsys):
    d, paths = fam
    plm, fa = tmp_path / "plm.npz", tmp_path / "fa.npz"
    _fit(paths, plm, "--focus", "focus", "--model", "plmdca", "--max-iter", "30")
    _fit(
        paths, fa, "--focus", "focus", "--model", "factored", "--heads", "5", "--init-from", str(plm), "--max-iter", "0"
    )
    z, p = np.load(fa), np.load(plm)
    K, W = z["couplings"].astype(float), p["couplings"].astype(float)
    sv = np.linalg.svd(W.reshape(400, 441), compute_uv=False)  # 0 iterations: the best 5 Kronecker terms
    np.testing.assert_allclose(np.linalg.norm(K - W), np.sqrt((sv[5:] ** 2).sum()), rtol=1e-4)
    np.testing.assert_allclose(z["fields"], p["fields"], rtol=1e-6)
    capsys.readouterr()
    _bad(
        tmp_path,
        capsys,
        ["potts", "fit", str(paths["fasta"]), "--model", "plmdca", "--init-from", str(plm), "--out", "OUT"],
        "init-from: starts factored attention only",
    )
