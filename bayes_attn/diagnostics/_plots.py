"""Plots of theory vs sampled runs (PNG, matplotlib Agg); statistics come from :mod:`._compare`."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def plot_accuracy_vs_width(theory, rows, path) -> None:
    """Accuracy vs width: theory line per temperature, sampled points with error bars, GP line."""
    fig, ax = plt.subplots(figsize=(6, 4))
    temps = sorted({r["temperature"] for r in rows}) or list(theory["temperature"].values)
    for k, T in enumerate(temps):
        c = f"C{k}"
        th = theory.sel(temperature=T)
        ax.plot(th["width"], 100 * th["accuracy"], "-", color=c, label=f"theory T={T:g}")
        ax.axhline(100 * float(th["gp_accuracy"].sel(subset="all")), color=c, ls=":", label=f"GP T={T:g}")
        pts = [r for r in rows if r["temperature"] == T]
        if pts:
            ax.errorbar([r["width"] for r in pts], [100 * r["acc_sampled"] for r in pts],
                        yerr=[100 * np.nan_to_num(r["acc_sampled_err"]) for r in pts], fmt="o", color=c,
                        capsize=3, label=f"sampled T={T:g}")
    ax.set_xscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("accuracy of the mean predictor (%)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_u_heatmaps(rows, labels, path) -> None:
    """``U_1`` heat maps, theory vs sampled side by side, one row per run (diverging, centred at 0)."""
    rows = sorted(rows, key=lambda r: (r["temperature"], r["width"]))
    fig, axes = plt.subplots(len(rows), 2, figsize=(6.4, 3.0 * len(rows)), squeeze=False,
                             layout="constrained")
    for ax_row, r in zip(axes, rows):
        vmax = max(np.abs(r["_U_theory"]).max(), np.abs(r["_U_sampled"]).max())
        for ax, key, title in ((ax_row[0], "_U_theory", "theory"), (ax_row[1], "_U_sampled", "sampled")):
            im = ax.imshow(r[key], cmap="RdBu_r", vmin=-vmax, vmax=vmax)
            ax.set_title(f"{title}: N={r['width']}, T={r['temperature']:g}", fontsize=9)
            ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=6)
            ax.set_yticks(range(len(labels)), labels, fontsize=6)
        fig.colorbar(im, ax=ax_row.tolist(), shrink=0.8)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_mean_scatter(rows, path) -> None:
    """Sampled vs theory predictor mean on the test inputs."""
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    lo, hi = np.inf, -np.inf
    for k, r in enumerate(sorted(rows, key=lambda r: (r["temperature"], r["width"]))):
        ax.plot(r["_mean_theory"], r["_mean_sampled"], ".", ms=3, color=f"C{k}",
                label=f"N={r['width']}, T={r['temperature']:g}")
        lo = min(lo, r["_mean_theory"].min(), r["_mean_sampled"].min())
        hi = max(hi, r["_mean_theory"].max(), r["_mean_sampled"].max())
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.set_xlabel("theory <f(x*)>")
    ax.set_ylabel("sampled <f(x*)>")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_mean_error_vs_width(rows, path) -> None:
    """Relative error of the predictor mean vs width (log-log), with the MCSE floor."""
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
    fig.savefig(path, dpi=120)
    plt.close(fig)


def compare_plots(theory, rows, out_dir) -> list[Path]:
    """Write the four comparison PNGs into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / n for n in ("accuracy_vs_width.png", "U_heatmaps.png", "mean_scatter.png",
                               "mean_error_vs_width.png")]
    plot_accuracy_vs_width(theory, rows, paths[0])
    plot_u_heatmaps(rows, list(theory["path"].values), paths[1])
    plot_mean_scatter(rows, paths[2])
    plot_mean_error_vs_width(rows, paths[3])
    return paths


__all__ = ["plot_accuracy_vs_width", "plot_u_heatmaps", "plot_mean_scatter", "plot_mean_error_vs_width",
           "compare_plots"]
