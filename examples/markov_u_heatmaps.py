"""Figure: order parameter ``U_1`` heat maps at N = 10, 100, 1000, theory next to sampled (theory.md §9.1, item 2).

Rows/columns reordered g, d, a1, a2; one diverging colour map centred at 0 per width.  ``T``:
the validation-selected value from ``markov_accuracy_vs_width.py`` (its ``results.json``),
else 0.01; sampled ``<U>`` from that script's run at the same width and ``T`` when present.
Writes ``$FIG_DIR/markov4_U_heatmaps.png`` and ``.json``.
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--temperature", type=float, help="T (default: the validation-selected one, else 0.01)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (test suite)")
    args = ap.parse_args(argv)
    sizes = dict(P=20, n_test=8, n_val=8) if args.smoke else {}
    from _common import (
        FIG_DIR,
        RUN_DIR,
        load_json,
        markov_sets,
        reorder,
        save_json,
        savefig,
        short_labels,
        solve_theory,
    )
    from bayes_attn.inference import predictor_statistics, read_run

    task, _ = markov_sets(4, **sizes)
    labels = short_labels(task)
    res = load_json(RUN_DIR / "markov4" / "results.json", {})
    sel_T = dict(zip(res.get("widths", []), res.get("selected_T", [])))
    fig, axes = plt.subplots(2, len(args.widths), figsize=(3.2 * len(args.widths), 6.0), squeeze=False)
    out = {}
    for k, N in enumerate(args.widths):
        T = args.temperature or sel_T.get(N, 0.01)
        spec = task.spec(width=N, temperature=T, readout="last")
        U_th, lab = reorder(np.asarray(solve_theory(spec, task).U), labels)
        run = RUN_DIR / "markov4" / f"N{N:05d}.nc"
        U_s = None
        if run.is_file():
            dt = read_run(run)
            if abs(float(dt.attrs["temperature"]) - T) < 1e-12:
                U_s, _ = reorder(predictor_statistics(dt)["U"], labels)
        vmax = float(np.max(np.abs(U_th)))
        for row, (name, U) in enumerate((("theory U*", U_th), ("sampled <U>", U_s))):
            ax = axes[row, k]
            if U is None:
                ax.text(0.5, 0.5, "not sampled", ha="center", va="center")
                ax.set_axis_off()
                continue
            im = ax.imshow(U, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
            for (a, b), v in np.ndenumerate(U):
                ax.text(b, a, f"{v:.2f}", ha="center", va="center", fontsize=7)
            ax.set_xticks(range(len(lab)), lab)
            ax.set_yticks(range(len(lab)), lab)
            ax.set_title(f"{name}, N={N}, T={T}", fontsize=8)
            fig.colorbar(im, ax=ax, shrink=0.7)
        out[N] = {"T": T, "labels": lab, "theory": U_th.tolist(), "sampled": None if U_s is None else U_s.tolist()}
        print(f"N={N}, T={T}: theory U (g,d,a1,a2)\n{np.round(U_th, 3)}")
    fig.tight_layout()
    savefig(fig, "markov4_U_heatmaps.png")
    save_json(out, FIG_DIR / "markov4_U_heatmaps.json")


if __name__ == "__main__":
    main()
