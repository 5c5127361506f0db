"""Figure: kernel-task alignment at N = 10, GP vs renormalised kernel (theory.md §8, §9.1 item 4).

``|v_k . y| / sqrt(P)`` for the top-30 eigenvectors ``v_k`` of ``K_GP`` and of ``K_U*`` (training
set); the cumulative sum of squares is the fraction of the label vector captured by the top k.
Writes ``$FIG_DIR/markov4_kernel_alignment.png`` and ``.json``.
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def alignment(K, y, k):
    """Overlaps ``|v_j . y| / sqrt(P)`` of the top-``k`` eigenvectors (descending eigenvalue)."""
    w, V = np.linalg.eigh(np.asarray(K))
    V = V[:, np.argsort(w)[::-1][:k]]
    return np.abs(V.T @ y) / np.sqrt(len(y))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=10)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--paths", type=int, default=4, choices=(4, 2))
    ap.add_argument("--temperature", type=float, help="T (default: the validation-selected one, else 0.01)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (test suite)")
    args = ap.parse_args(argv)
    sizes = dict(P=20, n_test=8, n_val=8) if args.smoke else {}
    from _common import FIG_DIR, RUN_DIR, gp_U, load_json, markov_sets, save_json, savefig, solve_theory
    from bayes_attn.linalg import kernel_matrix

    task, _ = markov_sets(args.paths, **sizes)
    res = load_json(RUN_DIR / f"markov{args.paths}" / "results.json", {})
    T = args.temperature or dict(zip(res.get("widths", []), res.get("selected_T", []))).get(args.width, 0.01)
    spec = task.spec(width=args.width, temperature=T, readout="last")
    phi = task.phi("train", spec)
    y = task.y_train
    args.top = min(args.top, task.n_train)
    a_gp = alignment(kernel_matrix(phi, phi, gp_U(spec)), y, args.top)
    a_u = alignment(kernel_matrix(phi, phi, solve_theory(spec, task).U), y, args.top)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
    k = np.arange(1, args.top + 1)
    ax1.bar(k - 0.2, a_gp, 0.4, label="K_GP")
    ax1.bar(k + 0.2, a_u, 0.4, label=f"K_U* (N={args.width})")
    ax1.set_xlabel("eigenvector rank k")
    ax1.set_ylabel("|v_k . y| / sqrt(P)")
    ax1.legend(fontsize=7)
    ax2.plot(k, np.cumsum(a_gp**2), "o-", ms=3, label="K_GP")
    ax2.plot(k, np.cumsum(a_u**2), "s-", ms=3, label="K_U*")
    ax2.set_xlabel("k")
    ax2.set_ylabel("cumulative fraction of |y|^2")
    ax2.legend(fontsize=7)
    fig.suptitle(f"Markov {args.paths} paths, T={T}", fontsize=9)
    fig.tight_layout()
    savefig(fig, f"markov{args.paths}_kernel_alignment.png")
    out = {
        "T": T,
        "width": args.width,
        "gp": a_gp.tolist(),
        "renormalised": a_u.tolist(),
        "top5_fraction_gp": float(np.sum(a_gp[:5] ** 2)),
        "top5_fraction_U": float(np.sum(a_u[:5] ** 2)),
        "top30_fraction_gp": float(np.sum(a_gp**2)),
        "top30_fraction_U": float(np.sum(a_u**2)),
    }
    save_json(out, FIG_DIR / f"markov{args.paths}_kernel_alignment.json")
    print({k: v for k, v in out.items() if "fraction" in k})


if __name__ == "__main__":
    main()
