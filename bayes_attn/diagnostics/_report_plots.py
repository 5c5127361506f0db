"""Figures of the HTML run report (matplotlib, Agg): trace/rank plots, theory vs samples.

Every function takes arrays and returns a :class:`matplotlib.figure.Figure`; :func:`png_base64`
turns a figure into the base64 PNG embedded in the report.  Rank plots follow Vehtari et
al. (2021): draws of all chains are ranked jointly and each chain's rank histogram should
be flat when the chains mix.
"""

from __future__ import annotations

import base64
import io

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


def u_heatmaps(panels: dict, labels):
    """Side-by-side heat maps of order parameters ``{title: U}``, one diverging colour scale centred at 0."""
    vmax = max(float(np.max(np.abs(U))) for U in panels.values()) or 1.0
    fig, axes = plt.subplots(1, len(panels), figsize=(3.3 * len(panels), 3.0), squeeze=False)
    for ax, (title, U) in zip(axes[0], panels.items()):
        im = ax.imshow(np.asarray(U), cmap="RdBu_r", vmin=-vmax, vmax=vmax)
        ax.set_title(title, fontsize=9)
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
        ax.set_yticks(range(len(labels)), labels, fontsize=6)
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8)
    return fig


def mean_scatter(theory_mean, sampled_mean, sampled_err=None, title: str = ""):
    """Sampled vs theory predictor mean on the test inputs, with the identity line."""
    t, s = np.asarray(theory_mean), np.asarray(sampled_mean)
    fig, ax = plt.subplots(figsize=(3.6, 3.4))
    ax.errorbar(t, s, yerr=sampled_err, fmt=".", ms=3, lw=0.5, alpha=0.7)
    lo, hi = float(min(t.min(), s.min())), float(max(t.max(), s.max()))
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    ax.set_xlabel("theory <f>")
    ax.set_ylabel("sampled <f>")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def accuracy_vs_width(widths, theory_acc, points: dict | None = None, lines: dict | None = None, title: str = ""):
    """Accuracy (%) vs width on a log axis: theory curve, sampled points ``{label: (N, mean, sd)}``, GP lines."""
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    ax.plot(widths, 100 * np.asarray(theory_acc), "o-", label="theory", color="C0")
    for k, (label, (N, m, sd)) in enumerate((points or {}).items()):
        ax.errorbar(N, 100 * np.asarray(m), yerr=None if sd is None else 100 * np.asarray(sd), fmt="s",
                    color=f"C{k + 1}", capsize=3, label=label)
    for k, (label, val) in enumerate((lines or {}).items()):
        ax.axhline(100 * val, ls="--", lw=1, color=f"C{k + 4}", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


__all__ = ["png_base64", "trace_rank_figure", "u_heatmaps", "mean_scatter", "accuracy_vs_width"]
