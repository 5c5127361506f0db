"""Self-contained HTML report of one run or a folder of runs (optionally with a theory file).

Contents per run: configuration (run attributes, config text, package versions), a
convergence table per invariant quantity (max R-hat, min bulk/tail ESS, max MCSE; every
cell marked pass/fail against :class:`Thresholds`), divergences and E-BFMI, the entries with
the worst R-hat/ESS, and trace + rank plots of the invariant quantities with the worst
R-hat.  With a theory file (``bayes-attn theory`` output: variables over ``(width,
temperature)``) a run at a matching width and temperature also gets ``U`` theory vs
sampled heat maps and a sampled-vs-theory predictor-mean scatter; a folder of runs gets
accuracy vs width (theory line, sampled points with the spread over chains).

Images are base64 PNGs inside ``<img src="data:image/png;base64,...">``; nothing external
is referenced, so the file opens offline.
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import xarray as xr

from .._errors import InputError
from ..config import ATTENTION_MODELS
from ..inference import predictor_statistics, read_run
from ..theory import read_theory
from ._compare import accuracy_error, chain_accuracies, match, predictor_mcse, run_attr, run_widths
from ._convergence import Report, Thresholds, exchange_lines, invariant_draws, summarize
from ._plots import accuracy_vs_width, mean_scatter, png_base64, trace_rank_figure, u_heatmaps

CSS = """
body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:0.6em 0;font-size:0.85em}
td,th{border:1px solid #bbb;padding:2px 8px;text-align:right}
th{background:#eee}
td.pass{background:#d8f5d0}
td.fail{background:#f8c8c8;font-weight:bold}
.verdict-pass{color:#185c10;font-weight:bold}
.verdict-fail{color:#a01010;font-weight:bold}
pre{background:#f6f6f6;padding:0.6em;font-size:0.8em;overflow-x:auto}
img{max-width:100%;display:block;margin:0.5em 0}
"""


def load_runs(path) -> list[tuple[str, xr.DataTree]]:
    """One run file, or every run (``.nc`` with a posterior group) in a folder, sorted by width."""
    p = Path(path)
    if p.is_dir():
        runs = []
        for f in sorted(p.glob("*.nc")):
            try:
                runs.append((f.name, read_run(f)))
            except InputError:
                continue  # theory files and other netCDF have no posterior group
        if not runs:
            raise InputError(f"run: no run files (.nc with a posterior group) in {str(p)!r}")
        return sorted(runs, key=lambda r: (_width(r[1]) or 0, r[0]))
    return [(p.name, read_run(p))]


def load_theory(path) -> xr.Dataset:
    """A theory file written by ``bayes-attn theory`` (see :func:`bayes_attn.theory.read_theory`)."""
    return read_theory(path)


def _width(dt):
    w = run_widths(dt)
    return None if w is None or len(set(w)) != 1 else w[0]


def quantity_table(rep: Report) -> list[dict]:
    """Per-quantity worst values of the convergence statistics and their pass/fail flags."""
    tab, t = rep.table, rep.thresholds
    rows = []
    names = sorted({str(i).split("[")[0] for i in tab.index}, key=lambda s: (s != "f", s))
    for q in names:
        sub = tab[[str(i).split("[")[0] == q for i in tab.index]]
        r = {
            "quantity": q,
            "entries": len(sub),
            "r_hat": float(sub["r_hat"].max()),
            "ess_bulk": float(sub["ess_bulk"].min()),
            "ess_tail": float(sub["ess_tail"].min()),
            "mcse_mean": float(sub["mcse_mean"].max()),
        }
        r["ok_r_hat"] = bool(r["r_hat"] < t.rhat_max)
        r["ok_ess_bulk"] = bool(r["ess_bulk"] > t.ess_bulk_min)
        r["ok_ess_tail"] = bool(r["ess_tail"] > t.ess_tail_min)
        rows.append(r)
    return rows


def _cell(value, ok, fmt):
    return f'<td class="{"pass" if ok else "fail"}">{fmt.format(value)}</td>'


def _table_html(rows: list[dict], rep: Report) -> str:
    t = rep.thresholds
    out = [
        f"<table><tr><th>quantity</th><th>entries</th><th>max R-hat (&lt; {t.rhat_max})</th>"
        f"<th>min ESS bulk (&gt; {t.ess_bulk_min:.0f})</th><th>min ESS tail (&gt; {t.ess_tail_min:.0f})</th>"
        "<th>max MCSE(mean)</th></tr>"
    ]
    for r in rows:
        out.append(
            f"<tr><td>{html.escape(r['quantity'])}</td><td>{r['entries']}</td>"
            + _cell(r["r_hat"], r["ok_r_hat"], "{:.4f}")
            + _cell(r["ess_bulk"], r["ok_ess_bulk"], "{:.0f}")
            + _cell(r["ess_tail"], r["ok_ess_tail"], "{:.0f}")
            + f"<td>{r['mcse_mean']:.3g}</td></tr>"
        )
    ok_div = rep.divergences <= t.max_divergences
    out.append(
        f"<tr><td>divergences</td><td></td>{_cell(rep.divergences, ok_div, '{}')}<td></td><td></td><td></td></tr>"
    )
    if rep.bfmi is not None:
        ok_b = bool(np.all(rep.bfmi >= t.bfmi_min))
        txt = ", ".join(f"{b:.2f}" for b in rep.bfmi)
        out.append(
            f'<tr><td>E-BFMI (&ge; {t.bfmi_min})</td><td></td><td class="{"pass" if ok_b else "fail"}">'
            f"{txt}</td><td></td><td></td><td></td></tr>"
        )
    for line in exchange_lines(rep.exchange) if rep.exchange is not None else []:  # replica exchange, not gated
        name, _, values = line.partition(": ")
        out.append(
            f"<tr><td>{html.escape(name)}</td><td></td><td>{html.escape(values)}</td><td></td><td></td><td></td></tr>"
        )
    out.append("</table>")
    return "\n".join(out)


def _worst_series(dt, rep: Report, k: int = 6) -> dict:
    """Draws ``(chain, draw)`` of the ``k`` invariant entries with the largest R-hat."""
    ds = invariant_draws(dt)
    tab = rep.table.sort_values("r_hat", ascending=False)
    out = {}
    for label in list(tab.index)[:k]:
        name = str(label).split("[")[0]
        da = ds[name]
        if "[" in str(label):
            key = str(label)[len(name) + 1 : -1]
            dim = [d for d in da.dims if d not in ("chain", "draw")][0]
            coord = da[dim].values
            idx = [i for i, c in enumerate(coord) if str(c) == key]
            if not idx:
                continue
            da = da.isel({dim: idx[0]})
        out[str(label)] = da.values
    return out


def _img(b64: str, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}">'


def _theory_section(name, dt, theory) -> str:
    try:
        i, j = match(theory, dt, name)
    except InputError:
        return "<p>No theory entry at this run's width and temperature.</p>"
    th = theory.isel(width=i, temperature=j)
    stats = predictor_statistics(dt)
    parts = []
    if "U" in th:
        labels = [str(v) for v in dt["posterior"].ds["U"]["path"].values]
        fig = u_heatmaps([{"theory U*": th["U"].values, "sampled <U>": stats["U"]}], labels)
        parts.append(_img(png_base64(fig), f"U theory vs sampled ({name})"))
        gap = float(np.max(np.abs(th["U"].values - stats["U"])))
        parts.append(f"<p>max |U* - &lt;U&gt;| = {gap:.3g}</p>")
    if "predictor_mean" in th:
        fig = mean_scatter(
            {name: (th["predictor_mean"].values, stats["mean"], predictor_mcse(dt))}, title=f"{name} (error bars: MCSE)"
        )
        parts.append(_img(png_base64(fig), f"predictor mean theory vs sampled ({name})"))
        rel = np.linalg.norm(stats["mean"] - th["predictor_mean"].values) / np.linalg.norm(th["predictor_mean"].values)
        parts.append(
            f"<p>relative error of the predictor mean: {rel:.3g}; accuracy sampled "
            f"{100 * stats.get('accuracy', np.nan):.1f}%"
            + (f", theory {100 * float(th['accuracy']):.1f}%" if "accuracy" in th else "")
            + "</p>"
        )
    return "\n".join(parts)


def _scan_section(runs, theory) -> str:
    """Accuracy vs width per temperature: theory curve, sampled points (accuracy of the pooled mean
    predictor ± s.e. over chains, as in ``bayes-attn compare``), GP lines."""
    if theory is None or "accuracy" not in theory or "width" not in theory.dims:
        return ""
    points = {}
    for _, dt in runs:
        N, T = _width(dt), run_attr(dt, "temperature")
        if N is None or T is None or "constant_data" not in dt.children:
            continue
        acc = float(predictor_statistics(dt)["accuracy"])
        points.setdefault(float(T), []).append((N, acc, accuracy_error(chain_accuracies(dt))))
    parts = ["<h2>Accuracy vs width</h2>"]
    for T in np.atleast_1d(theory["temperature"].values):
        th = theory.sel(temperature=T)
        pts = sorted(points.get(float(T), []))
        pts_dict = {"sampled (± s.e. over chains)": tuple(np.array(v) for v in zip(*pts))} if pts else None
        lines = {}
        for var in th.data_vars:
            if var.startswith("gp") and "accuracy" in var:
                da = th[var]
                if da.ndim == 0:
                    lines[var] = float(da)
                elif da.dims == ("subset",):
                    lines.update({f"GP {s}": float(da.sel(subset=s)) for s in da["subset"].values})
        fig = accuracy_vs_width(
            {"theory": (th["width"].values, th["accuracy"].values)}, pts_dict, lines, title=f"T = {float(T):g}"
        )
        parts.append(_img(png_base64(fig), f"accuracy vs width T={float(T):g}"))
    return "\n".join(parts)


def render_report(
    runs, theory: xr.Dataset | None = None, thresholds: Thresholds = Thresholds(), title: str = "bayes-attn run report"
) -> str:
    """The report as one HTML string (see module docstring)."""
    body = [f"<h1>{html.escape(title)}</h1>"]
    verdicts = []
    for name, dt in runs:
        rep = summarize(dt, thresholds)
        verdicts.append((name, rep.passed))
        v = (
            '<span class="verdict-pass">PASS</span>'
            if rep.passed
            else '<span class="verdict-fail">FAIL</span>: ' + html.escape("; ".join(rep.failures))
        )
        body.append(f"<h2>{html.escape(name)}</h2><p>verdict: {v}</p>")
        cfg_rows = "".join(
            f"<tr><th>{html.escape(k)}</th><td style='text-align:left'>{html.escape(str(val))}</td></tr>"
            for k, val in sorted(dt.attrs.items())
            if k != "config"
        )
        body.append("<h3>Configuration</h3><table>" + cfg_rows + "</table>")
        if "config" in dt.attrs:
            body.append(f"<pre>{html.escape(str(dt.attrs['config']))}</pre>")
        body.append("<h3>Convergence (invariant quantities)</h3>" + _table_html(quantity_table(rep), rep))
        if dt.attrs.get("model") in ATTENTION_MODELS:
            body.append(
                "<p>Sampled attention: the heads of a layer are exchangeable and the queries and keys are "
                "defined up to a rotation, so neither they nor the entries of U are gated; the verdict is on "
                "f and the eigenvalues of U (f alone in the GP limit, where U is fixed).</p>"
            )
        worst = rep.table.sort_values("r_hat", ascending=False).head(8)
        body.append("<p>entries with the largest R-hat:</p>" + worst.to_html(float_format=lambda x: f"{x:.4g}"))
        series = _worst_series(dt, rep)
        if series:
            body.append(_img(png_base64(trace_rank_figure(series)), f"trace and rank plots ({name})"))
        if theory is not None:
            body.append("<h3>Theory vs samples</h3>" + _theory_section(name, dt, theory))
    body.append(_scan_section(runs, theory))
    summary = "".join(
        f"<tr><td style='text-align:left'>{html.escape(n)}</td>"
        f"<td class='{'pass' if ok else 'fail'}'>{'PASS' if ok else 'FAIL'}</td></tr>"
        for n, ok in verdicts
    )
    body.insert(1, "<table><tr><th>run</th><th>verdict</th></tr>" + summary + "</table>")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
        + html.escape(title)
        + "</title><style>"
        + CSS
        + "</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def render_sweep_report(path, title: str) -> str:
    """The report of a sweep folder: overview table and theory-vs-sampled figures over the sweep axes."""
    from ._sweep import read_sweep, sweep_report_html

    body = sweep_report_html(read_sweep(path), title)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
        + html.escape(title)
        + "</title><style>"
        + CSS
        + "</style></head><body>\n<h1>"
        + html.escape(title)
        + "</h1>\n"
        + body
        + "\n</body></html>\n"
    )


def write_report(run_or_dir, out, theory=None, thresholds: Thresholds = Thresholds()) -> Path:
    """Render the report of a run file, a folder of runs (with an optional theory file) or a sweep
    folder (``bayes-attn sweep`` output) to ``out``."""
    from ._sweep import is_sweep_dir

    title = f"bayes-attn report: {Path(run_or_dir).name}"
    if is_sweep_dir(run_or_dir):
        text = render_sweep_report(run_or_dir, title)
    else:
        runs = load_runs(run_or_dir)
        th = load_theory(theory) if theory is not None else None
        text = render_report(runs, th, thresholds, title=title)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out


__all__ = ["render_report", "render_sweep_report", "write_report", "load_runs", "load_theory", "quantity_table"]
