"""HTML run report: convergence table flags, theory section, CLI, and rendering in headless Chromium."""

import os
import re
import shutil
import subprocess

import numpy as np
import pytest
import xarray as xr

from bayes_attn.cli import main
from bayes_attn.diagnostics import summarize
from bayes_attn.diagnostics._report import load_runs, quantity_table, render_report, write_report
from bayes_attn.inference import to_datatree, write_run


def _run(seed, shift=0.0, chains=4, draws=400, n_test=6, width=10, temperature=0.01, sampler="nuts", stats=None):
    """A run file with i.i.d. normal draws (well mixed) or chain-shifted f (not mixed); ``stats``: more sample
    statistics."""
    rng = np.random.default_rng(seed)
    f = rng.normal(size=(chains, draws, n_test)) + shift * np.arange(chains)[:, None, None]
    z = rng.normal(size=(chains, draws, 2, 2))
    U = np.eye(2) + 0.1 * (z + np.swapaxes(z, -1, -2))
    stats = {"diverging": np.zeros((chains, draws), bool), "energy": rng.normal(size=(chains, draws)), **(stats or {})}
    y_test = np.where(np.arange(n_test) % 2 == 0, 1.0, -1.0)
    return to_datatree(
        {"f": f, "U": U},
        stats,
        path_labels=["g", "d"],
        y_train=np.ones(4),
        y_test=y_test,
        attrs={
            "sampler": sampler,
            "width": [width] * 3,
            "temperature": temperature,
            "config": "[network]\nwidth = 10 # <b>escaped</b>",
        },
    )


def _theory(widths=(10, 30), temps=(0.01,), n_test=6):
    """A theory-shaped file (dims width x temperature), to exercise the rendering only."""
    nw, nt = len(widths), len(temps)
    return xr.Dataset(
        {
            "U": (("width", "temperature", "path", "path_"), np.broadcast_to(np.eye(2), (nw, nt, 2, 2)).copy()),
            "predictor_mean": (("width", "temperature", "test"), np.full((nw, nt, n_test), 0.1)),
            "accuracy": (("width", "temperature"), np.full((nw, nt), 0.5)),
        },
        coords={"width": list(widths), "temperature": list(temps)},
    )


def test_table_flags_follow_the_gates():
    good, bad = _run(0), _run(1, shift=3.0)
    rows = {r["quantity"]: r for r in quantity_table(summarize(good))}
    assert rows["f"]["ok_r_hat"] and rows["f"]["ok_ess_bulk"] and rows["U"]["ok_r_hat"]
    rows_bad = {r["quantity"]: r for r in quantity_table(summarize(bad))}
    assert not rows_bad["f"]["ok_r_hat"] and rows_bad["f"]["r_hat"] > 1.5 and rows_bad["U"]["ok_r_hat"]
    page = render_report([("good.nc", good), ("bad.nc", bad)])
    assert page.count('class="verdict-fail"') == 1 and page.count('class="verdict-pass"') == 1
    assert "&lt;b&gt;escaped&lt;/b&gt;" in page and "<b>escaped</b>" not in page
    assert not re.search(r"""(src|href)=["'](?!data:)""", page)  # nothing external


def test_a_tempering_run_reports_each_pairs_swap_rate_and_the_round_trips_ungated(tmp_path):
    """A replica-exchange run's statistics (pair_swap_rate per draw and pair, cumulative round_trips) reach the text
    and HTML reports as each pair's mean over chains and draws and each chain's final count; they do not change the
    verdict; a run of another sampler has no such lines."""
    from bayes_attn.diagnostics import exchange_summary, format_report

    dt = _run(0)
    chains, draws = 4, 400
    rates = np.broadcast_to([0.9, 0.5, 0.1], (chains, draws, 3)).copy()
    rates[:, ::2] -= 0.04  # pair means 0.88, 0.48, 0.08
    trips = np.cumsum(np.random.default_rng(1).random((chains, draws)) < 0.01 * np.arange(1, 5)[:, None], axis=1)
    run = _run(0, sampler="tempering", stats={"pair_swap_rate": rates, "round_trips": trips})
    assert run["sample_stats"].ds["pair_swap_rate"].dims == ("chain", "draw", "pair")
    ex = exchange_summary(run["sample_stats"].ds)
    np.testing.assert_allclose(ex["pair_swap_rate"], [0.88, 0.48, 0.08], rtol=1e-12)
    np.testing.assert_array_equal(ex["round_trips"], trips[:, -1])
    rep = summarize(run)
    assert rep.passed == summarize(dt).passed and rep.exchange is not None and summarize(dt).exchange is None
    text = format_report(rep)
    assert "swap acceptance per neighbouring pair (coldest first): 0.88, 0.48, 0.08" in text
    assert "round trips per chain: " + ", ".join(str(n) for n in trips[:, -1]) in text
    assert "round trips" not in format_report(summarize(dt))
    page = render_report([("tempering.nc", run)])
    assert "swap acceptance per neighbouring pair (coldest first)" in page and "0.88, 0.48, 0.08" in page


def test_theory_section_and_folder(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    write_run(_run(0, width=10), runs / "w10.nc")
    write_run(_run(2, width=30), runs / "w30.nc")
    _theory().to_netcdf(runs / "theory.nc", engine="h5netcdf")  # skipped as a run (no posterior)
    assert [n for n, _ in load_runs(runs)] == ["w10.nc", "w30.nc"]
    out = write_report(runs, tmp_path / "r.html", theory=runs / "theory.nc")
    page = out.read_text()
    assert "max |U* - &lt;U&gt;|" in page and "Accuracy vs width" in page
    assert page.count("<img") == 2 * 3 + 1  # per run: trace/rank, U maps, scatter; plus the width scan


def test_cli_report(tmp_path, capsys):
    write_run(_run(0), tmp_path / "run.nc")
    assert main(["report", str(tmp_path / "run.nc"), "--out", str(tmp_path / "a.html")]) == 0
    assert (tmp_path / "a.html").read_text().startswith("<!DOCTYPE html>")
    assert main(["report", str(tmp_path / "missing.nc"), "--out", str(tmp_path / "b.html")]) == 2
    assert "error: run:" in capsys.readouterr().err


# ---- headless Chromium ----------------------------------------------------------------------
CHECK = """<script>
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message || e)); }, true);
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var bad = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0 && i.naturalHeight > 0); });
  var el = document.createElement('div');
  el.id = 'render-check';
  el.textContent = 'images=' + imgs.length + ' undecoded=' + bad.length + ' errors=' + window.__errors.length;
  document.body.appendChild(el);
});
</script>"""


def _chromium():
    """The Chromium executable.  The test never installs packages: ``.ci/run`` installs Debian's chromium
    before the suite; under ``CI=true`` a missing browser is a failure, elsewhere a skip."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe:
        return exe
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        pytest.fail("headless Chromium is missing under CI=true (.ci/run installs it: apt-get install chromium)")
    pytest.skip("headless Chromium is missing (apt-get install chromium; CI installs it)")


@pytest.mark.browser
def test_report_renders_in_headless_chromium(tmp_path):
    exe = _chromium()
    write_run(_run(0), tmp_path / "w10.nc")
    write_run(_run(2, width=30), tmp_path / "w30.nc")
    _theory().to_netcdf(tmp_path / "theory.nc", engine="h5netcdf")
    page = write_report(tmp_path, tmp_path / "report.html", theory=tmp_path / "theory.nc").read_text()
    n_img = page.count("<img")
    assert n_img == 7
    # the page under test plus a checking script placed first in <head>
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("<head>", "<head>" + CHECK, 1))
    _assert_renders(exe, probe, n_img, tmp_path / "profile")


def _assert_renders(exe, probe, n_img, profile):
    """Chromium loads ``probe``: every image decodes, no script error, no console error message."""
    cmd = [
        exe,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--enable-logging=stderr",
        "--v=0",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        probe.as_uri(),
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    m = re.search(r'id="render-check">images=(\d+) undecoded=(\d+) errors=(\d+)<', res.stdout)
    assert m, "the check script did not run: " + res.stdout[-500:] + res.stderr[-1000:]
    assert (int(m.group(1)), int(m.group(2)), int(m.group(3))) == (n_img, 0, 0)
    console_errors = [line for line in res.stderr.splitlines() if "CONSOLE" in line and "ERROR" in line.upper()]
    assert not console_errors, console_errors


@pytest.mark.browser
def test_sweep_report_renders_in_headless_chromium(tmp_path):
    """The report of a sweep folder (overview table + figures over the sweep axes), in the browser."""
    import xarray as xr

    from bayes_attn.diagnostics._report import render_sweep_report

    exe = _chromium()
    shape = (2, 2)
    acc = np.array([[0.9, 0.92], [0.85, 0.86]])
    ds = xr.Dataset(
        {
            k: (("width", "seed"), v)
            for k, v in {
                "acc_sampled": acc,
                "acc_theory": acc + 0.01,
                "acc_gp": np.full(shape, 0.8),
                "mean_rel_err": np.array([[0.1, 0.12], [0.02, 0.03]]),
                "U_rel_err": np.full(shape, 0.05),
                "max_rhat": np.full(shape, 1.004),
                "min_ess_bulk": np.full(shape, 900.0),
                "divergences": np.zeros(shape, int),
                "converged": np.ones(shape, np.int8),
                "wall_s": np.full(shape, 9.0),
                "cell": np.array([["cells/a.nc", "cells/b.nc"], ["cells/c.nc", "cells/d.nc"]]),
                "status": np.full(shape, "done"),
                "error": np.full(shape, ""),
            }.items()
        },
        coords={"width": [10, 100], "seed": [0, 1]},
    )
    ds.to_netcdf(tmp_path / "sweep.nc", engine="h5netcdf")
    page = render_sweep_report(tmp_path, "sweep")
    assert page.count("<img") == 2 and page.count('<td class="pass">PASS</td>') == 4
    assert "4 PASS every convergence gate, 0 failed" in page
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("<head>", "<head>" + CHECK, 1))
    _assert_renders(exe, probe, 2, tmp_path / "profile")
