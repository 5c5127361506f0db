"""Figure: head pruning of the GD network vs theory head scores (theory.md §4.8, §9.2 item 3).

Theory head scores from ``U*`` at N = 10 and the validation-selected ``T``
(``digits_accuracy_vs_width.py``'s results, else 0.5); the GD network's accuracy drop when each
head is removed alone (no retraining, ``1/sqrt(H - dropped)`` rescaling); cumulative pruning
curves in ascending score order, descending order and 20 random orders (mean +- s.d.);
Spearman rank correlation between score and drop; ``U_GD`` vs ``U*`` (each divided by its
largest absolute entry).  Writes ``$FIG_DIR/digits_head_pruning.png`` and ``.json``.
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=10)
    ap.add_argument("--eval-set", default="test", choices=("test", "novel", "val"))
    ap.add_argument("--n-random", type=int, default=20)
    ap.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="T of the theory (default: the validation-selected T at --width in "
        "digits_accuracy_vs_width.py's results.json, else 0.5)",
    )
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (test suite)")
    args = ap.parse_args(argv)
    gd_kw = dict(width=8, steps=10, P=20, n_eval=20, batch=16) if args.smoke else {}
    if args.smoke:
        args.n_random = 3
    from _common import FIG_DIR, RUN_DIR, digits_gd, digits_tasks, load_json, save_json, savefig, solve_theory
    from bayes_attn import gd
    from bayes_attn.theory import head_scores

    src, sets, params, _ = digits_gd(**gd_kw)
    tasks = digits_tasks(src, sets, params)
    res = load_json(RUN_DIR / "digits" / "results.json", {})
    T = (
        args.temperature
        if args.temperature is not None
        else dict(zip(res.get("widths", []), res.get("selected_T", []))).get(args.width, 0.5)
    )
    spec = tasks["val"].spec(width=args.width, temperature=T, readout="mean")
    U = np.asarray(solve_theory(spec, tasks["val"]).U)
    heads = tasks["val"].heads
    scores = np.asarray(head_scores(U, heads))  # (L, H), normalised by the maximum (theory.md §4.8)
    x, y = sets[args.eval_set]
    base, drops = gd.single_head_drops(params, x, y)
    rho, pval = gd.rank_correlation(params, scores, drops)
    # the same raw scores normalised per layer (docs/evidence.md §6): ranks change only across layers
    scores_layer = np.asarray(head_scores(U, heads, normalize="layer"))
    rho_layer, pval_layer = gd.rank_correlation(params, scores_layer, drops)
    orders = gd.pruning_orders(params, scores, n_random=args.n_random, seed=0)
    curves = {k: gd.pruning_curve(params, x, y, orders[k]) for k in ("ascending", "descending")}
    rand = np.array([gd.pruning_curve(params, x, y, o) for o in orders["random"]])
    U_gd = np.asarray(gd.u_gd(params))
    Ug, Ut = U_gd / np.max(np.abs(U_gd)), U / np.max(np.abs(U))
    corr_U = float(np.corrcoef(Ug.ravel(), Ut.ravel())[0, 1])

    heads_list = [(l, h) for l in range(len(heads)) for h in range(heads[l])]
    asc = orders["ascending"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    ax = axes[0]
    sc = [scores[l][h] for l, h in asc]
    dr = [100 * drops[k] for k in asc]
    xs = np.arange(len(asc))
    ax.bar(xs - 0.2, sc, 0.4, label="theory score (N=10)")
    ax2 = ax.twinx()
    ax2.bar(xs + 0.2, dr, 0.4, color="C3", label="GD accuracy drop (points)")
    ax.set_xticks(xs, [f"{l}-{h}" for l, h in asc], rotation=90, fontsize=7)
    ax.set_ylabel("normalised score")
    ax2.set_ylabel("drop (points)")
    ax.set_title(f"single-head removal, Spearman rho = {rho:.2f} (p = {pval:.2g})", fontsize=8)
    ax = axes[1]
    k = np.arange(len(asc) + 1)
    ax.plot(k, 100 * curves["ascending"], "o-", label="ascending score")
    ax.plot(k, 100 * curves["descending"], "s-", label="descending score")
    m, s = np.nanmean(rand, axis=0), np.nanstd(rand, axis=0)
    ax.plot(k, 100 * m, "k--", label=f"random ({args.n_random}), mean +- sd")
    ax.fill_between(k, 100 * (m - s), 100 * (m + s), color="k", alpha=0.15)
    ax.set_xlabel("heads removed")
    ax.set_ylabel(f"GD accuracy on {args.eval_set} (%)")
    ax.legend(fontsize=7)
    ax = axes[2]
    v = 1.0
    ax.imshow(np.block([[Ut, np.full((len(Ut), 1), np.nan), Ug]]), cmap="RdBu_r", vmin=-v, vmax=v)
    ax.set_title(f"U* (left) vs U_GD (right), entry corr {corr_U:.2f}", fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])
    fig.tight_layout()
    savefig(fig, "digits_head_pruning.png")
    out = {
        "T": T,
        "width": args.width,
        "eval_set": args.eval_set,
        "full_accuracy": base,
        "heads": [f"{l}-{h}" for l, h in heads_list],
        "scores": {f"{l}-{h}": float(scores[l][h]) for l, h in heads_list},
        "drops": {f"{l}-{h}": float(drops[(l, h)]) for l, h in heads_list},
        "spearman_rho": rho,
        "spearman_p": pval,
        "scores_per_layer": {f"{l}-{h}": float(scores_layer[l][h]) for l, h in heads_list},
        "spearman_rho_per_layer": rho_layer,
        "spearman_p_per_layer": pval_layer,
        "ascending_order": [f"{l}-{h}" for l, h in asc],
        "curve_ascending": curves["ascending"].tolist(),
        "curve_descending": curves["descending"].tolist(),
        "curve_random_mean": m.tolist(),
        "curve_random_sd": s.tolist(),
        "U_corr_theory_gd": corr_U,
    }
    save_json(out, FIG_DIR / "digits_head_pruning.json")
    print(
        {
            k: out[k]
            for k in (
                "full_accuracy",
                "spearman_rho",
                "spearman_p",
                "spearman_rho_per_layer",
                "spearman_p_per_layer",
                "U_corr_theory_gd",
            )
        }
    )


if __name__ == "__main__":
    main()
