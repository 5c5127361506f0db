"""`bayes-attn compare` and the theory-vs-sampling gap statistics (docs/theory.md §5.3)."""

import json

import numpy as np
import pytest
import xarray as xr
from conftest import random_task

from bayes_attn.cli import main
from bayes_attn.inference import to_datatree, write_run
from bayes_attn.tasks import save_bundle


@pytest.fixture(scope="module")
def theory_file(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cmp")
    task = random_task(P=12, n0=4, heads=(2, 2), seed=5)
    save_bundle(task, tmp / "b.npz")
    (tmp / "c.toml").write_text('[data]\nfile = "b.npz"\n[network]\nwidth = [6, 40]\ntemperature = 0.05\n')
    assert main(["theory", str(tmp / "c.toml"), "--out", str(tmp / "t.nc"), "--no-progress"]) == 0
    return task, tmp / "t.nc"


def _fake_run(task, theory, i, shift, path, chains=4, draws=50, seed=0):
    """Draws whose mean is the theory mean + ``shift`` exactly (per chain), U likewise."""
    rng = np.random.default_rng(seed)
    m = theory["predictor_mean"].isel(width=i, temperature=0).values
    U = theory["U"].isel(width=i, temperature=0).values
    noise = rng.standard_normal((chains, draws, m.size))
    noise -= noise.mean(axis=1, keepdims=True)
    f = m + shift + 0.1 * noise
    Us = np.broadcast_to(U, (chains, draws) + U.shape).copy()
    widths = [int(w) for w in theory["widths"].isel(width=i).values]
    dt = to_datatree(
        {"f": f, "U": Us},
        {"diverging": np.zeros((chains, draws), bool)},
        path_labels=task.path_labels,
        y_train=task.y_train,
        y_test=task.y_test,
        attrs={"width": widths, "temperature": 0.05, "sampler": "fake"},
    )
    write_run(dt, path)


def test_compare_gaps_table_and_plots(theory_file, tmp_path):
    task, tfile = theory_file
    theory = xr.open_dataset(tfile, engine="h5netcdf").load()
    _fake_run(task, theory, 0, 0.0, tmp_path / "r0.nc")
    _fake_run(task, theory, 1, 0.05, tmp_path / "r1.nc", seed=1)
    out = tmp_path / "cmp"
    assert main(["compare", str(tfile), str(tmp_path / "r0.nc"), str(tmp_path / "r1.nc"), "--out", str(out)]) == 0
    rows = {r["width"]: r for r in json.loads((out / "compare.json").read_text())}
    m1 = theory["predictor_mean"].isel(width=1, temperature=0).values
    assert rows[6]["mean_rel_err"] < 1e-12 and rows[6]["U_rel_err"] < 1e-12
    assert rows[40]["mean_rel_err"] == pytest.approx(0.05 * np.sqrt(m1.size) / np.linalg.norm(m1), rel=1e-9)
    assert rows[40]["mean_rms_gap"] == pytest.approx(0.05, rel=1e-9)
    assert rows[6]["acc_theory"] == pytest.approx(float(theory["accuracy"].isel(width=0, temperature=0)))
    for name in (
        "compare.txt",
        "accuracy_vs_width.png",
        "U_heatmaps.png",
        "mean_scatter.png",
        "mean_error_vs_width.png",
    ):
        assert (out / name).stat().st_size > 0


def test_compare_unmatched_run_is_an_input_error(theory_file, tmp_path, capsys):
    task, tfile = theory_file
    theory = xr.open_dataset(tfile, engine="h5netcdf").load()
    _fake_run(task, theory, 0, 0.0, tmp_path / "r.nc")
    bad = theory.copy()
    bad["widths"] = bad["widths"] + 1
    bad.to_netcdf(tmp_path / "bad.nc", engine="h5netcdf")
    assert main(["compare", str(tmp_path / "bad.nc"), str(tmp_path / "r.nc"), "--out", str(tmp_path / "o")]) == 2
    assert "no theory entry at width" in capsys.readouterr().err
