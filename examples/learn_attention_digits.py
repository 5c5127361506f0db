"""Digits in-context task: Q/K learned by evidence vs the GD network's Q/K, and head selection by evidence
(methods: docs/evidence.md §5–§6; results: docs/results.md §3.2, §3.4, §3.5; docs/theory.md §9.2).

1. GD network (`bayes_attn.gd`, the digits defaults of docs/results.md: width 128, L = 2, H = 4, d_qk = 16, early
   stopping on validation) trained here, or read from ``$RUN_DIR/digits/gd.npz`` when present;
2. theory (saddle point at width ``--width``, temperature ``--temperature``) with (a) the GD network's Q/K,
   (b) random Q/K (the GD initialisation), (c) Q/K learned by evidence from the random start and (d) from the
   GD Q/K (:func:`bayes_attn.theory.fit_attention`, Adam); test and validation accuracy of each;
3. head selection with the GD Q/K: backward elimination by evidence, head scores (4.8b) normalised across and
   per layer, and the GD network's single-head ablation drops (4.8f); Spearman correlations with the drops.

The theory's training set has ``--P`` episodes *(project choice: 200 instead of 600 to fit the compute budget;
every evidence evaluation re-solves the 16-path saddle point)*.  Writes ``$FIG_DIR/learn_digits.png/.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

FIG_DIR = Path(os.environ.get("FIG_DIR", "docs/figures"))
RUN_DIR = Path(os.environ.get("RUN_DIR", "runs"))


def gd_network(src, sets, smoke):
    from bayes_attn import gd

    path = RUN_DIR / "digits" / "gd.npz"
    if path.is_file() and not smoke:
        print(f"loaded {path}")
        return gd.load_gd_params(path), None
    cfg = (
        gd.GDConfig(width=8, steps=10, eval_every=5, patience=2, batch=16)
        if smoke
        else gd.GDConfig(width=128, steps=3000, eval_every=100, patience=8, batch=128)
    )
    t0 = time.time()
    res = gd.train(
        cfg, lambda s: src.episodes("train", cfg.batch, 100_000 + s, balanced=False), sets["val"], src.n0, progress=True
    )
    if not smoke:
        gd.save_gd(path, res, sets)
    return res.params, {
        "best_step": res.best_step,
        "best_val_accuracy": res.best_val_accuracy,
        "seconds": time.time() - t0,
        "config": repr(cfg),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, default=200)
    ap.add_argument("--width", type=int, default=100)
    ap.add_argument("--temperature", type=float, default=0.25)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (test suite)")
    args = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp
    from scipy.stats import spearmanr

    import bayes_attn  # noqa: F401
    from bayes_attn import gd
    from bayes_attn.tasks import digits_episodes
    from bayes_attn.theory import (
        TheoryWarning,
        evidence_head_selection,
        fit_attention,
        head_scores,
        log_evidence,
        theory_accuracy,
        with_attention,
    )

    if args.smoke:
        args.P, args.steps, args.width = 12, 1, 20
    src = digits_episodes()
    sets = src.episode_sets(P=args.P, n_eval=40 if args.smoke else 1000, seed=0)
    params, info = gd_network(src, sets, args.smoke)
    x_te, y_te = sets["test"]
    gd_acc = gd.accuracy(params, x_te, y_te)
    task_gd = src.task(gd.export_layers(params), sets, test="test")
    spec = task_gd.spec(width=args.width, temperature=args.temperature, readout="mean")
    heads = task_gd.heads
    rng_params = gd.init_params(jax.random.PRNGKey(1), gd.GDConfig(width=8, heads=heads), src.n0)
    task_rnd = src.task(gd.export_layers(rng_params), sets, test="test")
    out = {
        "P": args.P,
        "width": args.width,
        "T": args.temperature,
        "steps": args.steps,
        "lr": args.lr,
        "gd_test_accuracy": gd_acc,
        "gd_training": info,
        "runs": {},
    }

    def evaluate(name, task, fit=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TheoryWarning)
            ev = log_evidence(task, spec)
        from bayes_attn.theory import attention_params

        p = attention_params(task)
        U = jnp.asarray(ev.solution.U)
        row = {
            "log_evidence": ev.log_evidence,
            "solver_ok": bool(ev.solution.status.ok),
            "test_accuracy": theory_accuracy(p, spec, task, U, x_te, y_te),
            "val_accuracy": theory_accuracy(p, spec, task, U, *sets["val"]),
        }
        if fit is not None:
            row.update(
                history=[e["log_evidence"] for e in fit.history],
                best_step=fit.best_step,
                message=fit.message,
                val_history=[e["val_accuracy"] for e in fit.history],
            )
        out["runs"][name] = row
        print(name, {k: v for k, v in row.items() if k not in ("history", "val_history")}, flush=True)

    evaluate("theory_gd_qk", task_gd)
    evaluate("theory_random_qk", task_rnd)
    for name, start in (("evidence_from_random", task_rnd), ("evidence_from_gd", task_gd)):
        t0 = time.time()
        fit = fit_attention(start, spec, steps=args.steps, lr=args.lr, val=sets["val"], eval_every=10, progress=True)
        evaluate(name, with_attention(start, fit.params), fit)
        out["runs"][name]["seconds"] = time.time() - t0
    # head selection with the GD Q/K
    ph_tr, ph_te = task_gd.phi("train", spec), task_gd.phi("test", spec)
    t0 = time.time()
    stages = evidence_head_selection(
        spec, ph_tr, task_gd.y_train, ph_te, y_te, progress=True, max_removals=1 if args.smoke else None
    )
    base, drops = gd.single_head_drops(params, x_te, y_te)
    hl = [(l, h) for l, H in enumerate(heads) for h in range(H)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TheoryWarning)
        U = np.asarray(log_evidence(task_gd, spec).solution.U)
    sc = {m: np.concatenate(head_scores(U, heads, normalize=m)) for m in ("all", "layer")}
    d = np.array([drops[k] for k in hl])
    first_stage = stages[1]["candidates"] if len(stages) > 1 else {}
    full = stages[0]["log_evidence"]
    cost = np.array([full - first_stage.get(f"{l}-{h}", np.nan) for l, h in hl])
    corr = {}
    for name, s in (("score_all", sc["all"]), ("score_layer", sc["layer"]), ("evidence_cost", cost)):
        ok = np.isfinite(s)
        r = spearmanr(s[ok], d[ok])
        corr[name] = {"rho": float(r.statistic), "p": float(r.pvalue), "n": int(ok.sum())}
    elim = [tuple(r) for r in stages[-1]["removed"]]
    curves = {
        "evidence": [gd.accuracy(params, x_te, y_te, dropped=elim[:k]) for k in range(len(elim) + 1)],
        "score_all": gd.pruning_curve(
            params, x_te, y_te, [hl[i] for i in np.argsort(sc["all"], kind="stable")]
        ).tolist(),
    }
    out["head_selection"] = {
        "heads": [f"{l}-{h}" for l, h in hl],
        "gd_drops": d.tolist(),
        "gd_full_accuracy": base,
        "scores_all": sc["all"].tolist(),
        "scores_layer": sc["layer"].tolist(),
        "evidence_cost_single": cost.tolist(),
        "spearman": corr,
        "stages": [
            {"removed": s["removed"], "log_evidence": s["log_evidence"], "theory_test_accuracy": s["test_accuracy"]}
            for s in stages
        ],
        "gd_pruning_curves": curves,
        "seconds": time.time() - t0,
    }
    print("head selection", corr, flush=True)
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    for name in ("evidence_from_random", "evidence_from_gd"):
        axes[0].plot(out["runs"][name]["history"], label=name)
    axes[0].set_xlabel("step")
    axes[0].set_ylabel("log evidence (E1)")
    axes[0].legend(fontsize=7)
    names = list(out["runs"])
    axes[1].bar(range(len(names)), [100 * out["runs"][n]["test_accuracy"] for n in names])
    axes[1].axhline(100 * gd_acc, color="k", ls="--", label="GD network")
    axes[1].set_xticks(range(len(names)), names, rotation=20, fontsize=7)
    axes[1].set_ylim(50, 100)
    axes[1].set_ylabel("test accuracy (%)")
    axes[1].legend(fontsize=7)
    k = np.arange(len(curves["evidence"]))
    axes[2].plot(k, 100 * np.array(curves["evidence"]), "o-", label="evidence elimination order")
    axes[2].plot(
        np.arange(len(curves["score_all"])), 100 * np.array(curves["score_all"]), "s-", label="ascending score"
    )
    axes[2].set_xlabel("heads removed (GD network, no retraining)")
    axes[2].set_ylabel("GD test accuracy (%)")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    FIG_DIR.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIG_DIR / "learn_digits.png", dpi=100)
    tmp = FIG_DIR / "learn_digits.json.tmp"
    tmp.write_text(json.dumps(out, indent=1, default=float))
    os.replace(tmp, FIG_DIR / "learn_digits.json")
    print(f"wrote {FIG_DIR / 'learn_digits.png'} and .json")


if __name__ == "__main__":
    main()
