"""Every figure of the diagnostics: trace/rank plots, theory vs samples (matplotlib, Agg).

Figure functions take arrays and return a :class:`matplotlib.figure.Figure`; the HTML report embeds
them as base64 PNGs (:func:`png_base64`), ``bayes-attn compare`` saves them as files
(:func:`compare_plots`).  Rank plots follow Vehtari et al. (2021): draws of all chains are ranked
jointly and each chain's rank histogram should be flat when the chains mix.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.stats import rankdata  # noqa: E402


def png_base64(fig, dpi: int = 90) -> str:
    """The figure as a base64-encoded PNG (the figure is closed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def save_png(fig, path, dpi: int = 120) -> Path:
    """Save and close ``fig``."""
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return Path(path)


def trace_rank_figure(series: dict, bins: int = 20):
    """One row per quantity: trace of every chain (left) and per-chain rank histograms (right).

    ``series``: ``{name: array (chain, draw)}``.
    """
    n = max(len(series), 1)
    fig, axes = plt.subplots(n, 2, figsize=(9, 1.9 * n), squeeze=False)
    for row, (name, draws) in zip(axes, series.items()):
        draws = np.asarray(draws, dtype=float)
        n_chain, n_draw = draws.shape
        for c in range(n_chain):
            row[0].plot(draws[c], lw=0.6, alpha=0.8)
        row[0].set_ylabel(name, fontsize=7)
        ranks = rankdata(draws.ravel()).reshape(draws.shape)
        edges = np.linspace(0, ranks.size, bins + 1)
        for c in range(n_chain):
            h, _ = np.histogram(ranks[c], bins=edges)
            row[1].step(np.arange(bins), h, where="mid", lw=1.0)
        row[1].axhline(n_draw / bins, color="k", ls=":", lw=0.8)
        row[1].set_yticks([])
    axes[0, 0].set_title("trace (one line per chain)", fontsize=8)
    axes[0, 1].set_title("rank histogram per chain (flat = mixed)", fontsize=8)
    axes[-1, 0].set_xlabel("draw", fontsize=8)
    axes[-1, 1].set_xlabel("rank bin", fontsize=8)
    fig.tight_layout()
    return fig


def u_heatmaps(rows: list[dict], labels):
    """Heat maps of order parameters: one figure row per dict ``{title: U}``, a diverging colour
    scale centred at 0 shared within the row."""
    ncol = max(len(r) for r in rows)
    fig, axes = plt.subplots(
        len(rows), ncol, figsize=(3.3 * ncol, 3.0 * len(rows)), squeeze=False, layout="constrained"
    )
    for ax_row, panels in zip(axes, rows):
        vmax = max(float(np.max(np.abs(U))) for U in panels.values()) or 1.0
        for ax, (title, U) in zip(ax_row, panels.items()):
            im = ax.imshow(np.asarray(U), cmap="RdBu_r", vmin=-vmax, vmax=vmax)
            ax.set_title(title, fontsize=9)
            ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
            ax.set_yticks(range(len(labels)), labels, fontsize=6)
        for ax in ax_row[len(panels) :]:
            ax.axis("off")
        fig.colorbar(im, ax=ax_row.tolist(), shrink=0.8)
    return fig


def mean_scatter(series: dict, title: str = ""):
    """Sampled vs theory predictor mean: ``{label: (theory_mean, sampled_mean, mcse or None)}``, identity line."""
    fig, ax = plt.subplots(figsize=(4.5, 4.3))
    lo, hi = np.inf, -np.inf
    for k, (label, (t, s, err)) in enumerate(series.items()):
        t, s = np.asarray(t), np.asarray(s)
        ax.errorbar(t, s, yerr=err, fmt=".", ms=3, lw=0.5, alpha=0.7, color=f"C{k}", label=label)
        lo, hi = min(lo, t.min(), s.min()), max(hi, t.max(), s.max())
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    ax.set_xlabel("theory <f(x*)>")
    ax.set_ylabel("sampled <f(x*)>")
    ax.set_title(title, fontsize=9)
    if len(series) > 1:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def accuracy_vs_width(curves: dict, points: dict | None = None, lines: dict | None = None, title: str = ""):
    """Accuracy (%) vs width on a log axis: theory ``curves`` ``{label: (N, acc)}``, sampled ``points``
    ``{label: (N, acc, err)}`` with error bars, horizontal ``lines`` ``{label: acc}`` (GP baselines)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    for k, (label, (N, acc)) in enumerate(curves.items()):
        ax.plot(N, 100 * np.asarray(acc), "o-", ms=3, color=f"C{k}", label=label)
    for k, (label, (N, m, err)) in enumerate((points or {}).items()):
        ax.errorbar(
            N,
            100 * np.asarray(m),
            yerr=None if err is None else 100 * np.nan_to_num(np.asarray(err)),
            fmt="s",
            color=f"C{k}",
            mfc="white",
            capsize=3,
            label=label,
        )
    for k, (label, val) in enumerate((lines or {}).items()):
        ax.axhline(100 * val, ls=":", lw=1, color=f"C{k}", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("test accuracy of the mean predictor (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def mean_error_vs_width(rows: list[dict]):
    """Relative error of the predictor mean vs width (log-log) with the MCSE floor, per temperature."""
    fig, ax = plt.subplots(figsize=(5, 4))
    for k, T in enumerate(sorted({r["temperature"] for r in rows})):
        pts = sorted((r for r in rows if r["temperature"] == T), key=lambda r: r["width"])
        w = [r["width"] for r in pts]
        ax.plot(w, [r["mean_rel_err"] for r in pts], "o-", color=f"C{k}", label=f"T={T:g}")
        floor = [r["mean_rms_mcse"] / max(np.sqrt(np.mean(r["_mean_theory"] ** 2)), 1e-300) for r in pts]
        ax.plot(w, floor, "x:", color=f"C{k}", label=f"MCSE floor T={T:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("||<f>_sampled - <f>_theory|| / ||<f>_theory||")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def comparison_figures(theory, rows: list[dict]) -> dict:
    """The theory-vs-sampled figures of a set of :func:`~bayes_attn.diagnostics.run_gaps` rows."""
    rows = sorted(rows, key=lambda r: (r["temperature"], r["width"]))
    temps = sorted({r["temperature"] for r in rows}) or [float(t) for t in np.atleast_1d(theory["temperature"].values)]
    curves, points, lines = {}, {}, {}
    for T in temps:
        th = theory.sel(temperature=T)
        curves[f"theory T={T:g}"] = (th["width"].values, th["accuracy"].values)
        if "gp_accuracy" in th:
            lines[f"GP T={T:g}"] = float(th["gp_accuracy"].sel(subset="all"))
        pts = [r for r in rows if r["temperature"] == T]
        if pts:
            points[f"sampled T={T:g} (± s.e. over chains)"] = (
                [r["width"] for r in pts],
                [r["acc_sampled"] for r in pts],
                [r["acc_sampled_err"] for r in pts],
            )
    labels = [str(v) for v in theory["path"].values]
    return {
        "accuracy_vs_width.png": accuracy_vs_width(curves, points, lines),
        "U_heatmaps.png": u_heatmaps(
            [
                {
                    f"theory: N={r['width']}, T={r['temperature']:g}": r["_U_theory"],
                    f"sampled: N={r['width']}, T={r['temperature']:g}": r["_U_sampled"],
                }
                for r in rows
            ],
            labels,
        ),
        "mean_scatter.png": mean_scatter(
            {
                f"N={r['width']}, T={r['temperature']:g}": (r["_mean_theory"], r["_mean_sampled"], r["_mean_mcse"])
                for r in rows
            }
        ),
        "mean_error_vs_width.png": mean_error_vs_width(rows),
    }


def compare_plots(theory, rows: list[dict], out_dir) -> list[Path]:
    """Write the :func:`comparison_figures` as PNG files into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [save_png(fig, out / name) for name, fig in comparison_figures(theory, rows).items()]


__all__ = [
    "png_base64",
    "save_png",
    "trace_rank_figure",
    "u_heatmaps",
    "mean_scatter",
    "accuracy_vs_width",
    "mean_error_vs_width",
    "comparison_figures",
    "compare_plots",
]
