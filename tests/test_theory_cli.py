"""`bayes-attn theory` (docs/theory.md §4, §8): scan file contents, GP baselines, strict mode."""

import numpy as np
import pytest
import xarray as xr
from conftest import random_task

from bayes_attn.cli import main
from bayes_attn.tasks import save_bundle


def predict(U, phi_tr, phi_te, y, T):
    """Dense GP regression with the renormalised kernel, written out in numpy (an independent route:
    ``K = sum_i Phi_i U Phi_i^T``, mean ``k^T (K + T I)^-1 y``, variance ``k** - k^T (K + T I)^-1 k``)."""
    phi_tr, phi_te, U = (np.asarray(a, dtype=float) for a in (phi_tr, phi_te, U))
    kern = lambda a, b: np.einsum("mip,pq,niq->mn", a, U, b)  # noqa: E731
    A = kern(phi_tr, phi_tr) + T * np.eye(len(y))
    k = kern(phi_tr, phi_te)
    return k.T @ np.linalg.solve(A, y), np.diag(kern(phi_te, phi_te)) - np.sum(k * np.linalg.solve(A, k), axis=0)


def _config(tmp_path, extra=""):
    task = random_task(P=12, n0=4, heads=(2, 2), seed=5)
    save_bundle(task, tmp_path / "b.npz")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"""
[data]
file = "b.npz"
[network]
width = [6, 40]
temperature = [0.05, 0.2]
{extra}""")
    return task, cfg


def test_theory_scan_file(tmp_path):
    task, cfg = _config(tmp_path, "[theory]\ngp_subsets = { first = [[0], [0, 1]] }\n")
    out = tmp_path / "t.nc"
    assert main(["theory", str(cfg), "--out", str(out), "--no-progress", "--strict"]) == 0
    ds = xr.open_dataset(out, engine="h5netcdf").load()
    assert ds["U"].dims == ("width", "temperature", "path", "path_")
    assert list(ds["path"].values) == task.path_labels
    assert ds["U_2"].shape == (2, 2, 2, 2) and ds["U_a"].shape == (2, 2)
    assert bool((ds["converged"] == 1).all()) and bool((ds["hessian_pd"] == 1).all())
    assert float(ds["grad_norm"].max()) <= 1e-9
    # predictor = GP regression with the stored U (docs/theory.md eq. (4.2b)), dense numpy route
    spec = task.spec(width=6, temperature=0.05)
    U = ds["U"].isel(width=0, temperature=0).values
    m, v = predict(U, task.phi("train", spec), task.phi("test", spec), task.y_train, 0.05)
    np.testing.assert_allclose(ds["predictor_mean"].isel(width=0, temperature=0), m, rtol=1e-10)
    np.testing.assert_allclose(ds["predictor_var"].isel(width=0, temperature=0), v, rtol=1e-10)
    acc = np.mean(np.sign(m) == task.y_test)
    assert float(ds["accuracy"].isel(width=0, temperature=0)) == pytest.approx(acc)
    # GP baseline: U = I (all sigma^2 = 1); subset "first" keeps paths (0,0), (0,1)
    m_gp, _ = predict(np.eye(4), task.phi("train", spec), task.phi("test", spec), task.y_train, 0.05)
    np.testing.assert_allclose(ds["gp_mean"].sel(subset="all").isel(temperature=0), m_gp, rtol=1e-10)
    phi_tr, phi_te = task.phi("train", spec), task.phi("test", spec)
    sub_tr, sub_te = phi_tr[:, :, :2] * np.sqrt(2.0), phi_te[:, :, :2] * np.sqrt(2.0)
    m_sub, _ = predict(np.eye(2), sub_tr, sub_te, task.y_train, 0.05)
    np.testing.assert_allclose(ds["gp_mean"].sel(subset="first").isel(temperature=0), m_sub, rtol=1e-10)
    # larger width: closer to the GP value
    d = np.abs(ds["U"].sel(temperature=0.05) - np.eye(4)).max(dim=("path", "path_")).values
    assert d[1] < d[0]


def test_theory_bad_input(tmp_path, capsys):
    _, cfg = _config(tmp_path, "[theory]\ngp_subsets = { bad = [[7], [0]] }\n")
    assert main(["theory", str(cfg), "--out", str(tmp_path / "t.nc"), "--no-progress"]) == 2
    assert "theory.gp_subsets.bad" in capsys.readouterr().err
    _, cfg = _config(tmp_path, '[theory]\npath_space = "sparse"\n')
    assert main(["theory", str(cfg), "--out", str(tmp_path / "t.nc"), "--no-progress"]) == 2
    assert "theory.path_space" in capsys.readouterr().err


def test_theory_strict_fails_on_ill_posed(tmp_path):
    rng = np.random.default_rng(0)
    from bayes_attn.network import HeadLayer
    from bayes_attn.tasks import Task

    P, n0 = 15, 6  # one path: rank K <= 6 < P, T -> 0
    task = Task(
        rng.standard_normal((P, 1, n0)),
        np.sign(rng.standard_normal(P)),
        rng.standard_normal((4, 1, n0)),
        np.ones(4),
        (HeadLayer.w(rng.standard_normal((1, n0, n0))),),
    )
    save_bundle(task, tmp_path / "b.npz")
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        '[data]\nfile = "b.npz"\n[network]\nwidth = 5\ntemperature = 1e-13\n'
        '[theory]\nmax_iter = 30\nwarm_start = false\npath_space = "dense"\n'  # P x P: fails (docs/theory.md §4.10)
    )
    assert main(["theory", str(cfg), "--out", str(tmp_path / "t.nc"), "--no-progress", "--strict"]) == 1
    ds = xr.open_dataset(tmp_path / "t.nc", engine="h5netcdf").load()
    assert int(ds["converged"].sum() * ds["hessian_pd"].sum()) == 0
