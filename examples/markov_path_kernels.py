"""Figure: per-path kernels and renormalised vs GP kernel at N = 10 (theory.md §9.1, item 3).

Diagonal path kernels ``C_pipi`` for g, d, a1, a2 plus ``K_GP`` and ``K_U*`` on a 50 x 50 block
of training examples (indices 0-24 of class +1 and 75-99 of class -1).  ``T`` as in
markov_u_heatmaps.py.  Writes ``$FIG_DIR/markov4_path_kernels.png`` and ``.json`` (within-class
minus between-class mean of each normalised kernel: how much it separates the classes).
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def contrast(K, y):
    """(mean within-class - mean between-class) entry of ``K / mean|diag K|``."""
    K = np.asarray(K) / np.mean(np.abs(np.diag(K)))
    same = np.equal.outer(y, y)
    return float(K[same].mean() - K[~same].mean())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=10)
    ap.add_argument("--temperature", type=float, help="T (default: the validation-selected one, else 0.01)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (test suite)")
    args = ap.parse_args(argv)
    sizes = dict(P=20, n_test=8, n_val=8) if args.smoke else {}
    from _common import FIG_DIR, RUN_DIR, gp_U, load_json, markov_sets, save_json, savefig, short_labels, solve_theory
    from bayes_attn.linalg import kernel_matrix
    from bayes_attn.network import path_kernel_matrix

    task, _ = markov_sets(4, **sizes)
    res = load_json(RUN_DIR / "markov4" / "results.json", {})
    T = args.temperature or dict(zip(res.get("widths", []), res.get("selected_T", []))).get(args.width, 0.01)
    spec = task.spec(width=args.width, temperature=T, readout="last")
    phi = task.phi("train", spec)
    b = min(25, task.n_train // 4)  # paper: 0-24 (y=+1) and 75-99 (y=-1) of P=100
    idx = np.r_[0:b, task.n_train - b : task.n_train]
    y = task.y_train[idx]
    ph = phi[idx]
    B = np.asarray(path_kernel_matrix(ph, ph))  # C_{pi pi'} (docs/theory.md eq. (4.1a))
    U = solve_theory(spec, task).U
    panels = {f"C {lab}": B[p, p] for p, lab in enumerate(short_labels(task))}
    panels["K_GP"] = np.asarray(kernel_matrix(ph, ph, gp_U(spec)))
    panels[f"K_U* (N={args.width})"] = np.asarray(kernel_matrix(ph, ph, U))
    order = ["C g", "C d", "C a1", "C a2", "K_GP", f"K_U* (N={args.width})"]
    fig, axes = plt.subplots(2, 3, figsize=(10, 6.6))
    out = {"T": T, "width": args.width, "class_contrast": {}}
    for ax, name in zip(axes.ravel(), order):
        K = panels[name]
        v = float(np.max(np.abs(K)))
        ax.imshow(K, cmap="RdBu_r", vmin=-v, vmax=v)
        out["class_contrast"][name] = contrast(K, y)
        ax.set_title(f"{name}  (contrast {out['class_contrast'][name]:.2f})", fontsize=8)
        ax.axhline(b - 0.5, color="k", lw=0.5)
        ax.axvline(b - 0.5, color="k", lw=0.5)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(f"training examples 0-{b - 1} (y=+1) and {task.n_train - b}-{task.n_train - 1} (y=-1)", fontsize=9)
    fig.tight_layout()
    savefig(fig, "markov4_path_kernels.png")
    save_json(out, FIG_DIR / "markov4_path_kernels.json")
    print(out)


if __name__ == "__main__":
    main()
