"""Evidence-based head selection on the Markov 4-path task vs score-based pruning (docs/evidence.md §6).

Hand-built heads (good, rand | unif, rand; docs/theory.md §9.1).  At each width: (i) backward elimination by
evidence (:func:`bayes_attn.theory.evidence_head_selection`: remove the head whose removal costs the least
saddle-point log evidence, re-solving ``U*`` of every candidate sub-network); (ii) the head scores (4.8b) of
``U*`` (across-layer and per-layer normalisation) and the order they imply; (iii) single-head silencing drops of
the theory predictor (4.8e, ``U*`` not re-solved) and single-head removal drops (sub-network re-solved).
Writes ``$FIG_DIR/head_selection_markov.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

FIG_DIR = Path(os.environ.get("FIG_DIR", "docs/figures"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--temperature", type=float, default=0.01)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (test suite)")
    args = ap.parse_args(argv)
    import jax.numpy as jnp

    import bayes_attn  # noqa: F401
    from bayes_attn.tasks import markov_task
    from bayes_attn.theory import (
        TheoryWarning,
        drop_head,
        evidence_head_selection,
        head_scores,
        log_evidence,
        predict,
        saddle_log_evidence,
        silence,
        sub_network,
    )
    from bayes_attn.theory._predictor import subset_phi

    P, n_test = (20, 20) if args.smoke else (100, 1000)
    if args.smoke:
        args.widths = [10]
    task = markov_task(P, n_test, "good+denoising" if args.smoke else 4)  # smoke: 2 heads, fewer compilations
    names = [f"L{l + 1}:{n}" for l, layer in enumerate(task.head_names) for n in layer]
    heads = [(l, h) for l, H in enumerate(task.heads) for h in range(H)]
    out = {"P": P, "T": args.temperature, "heads": names, "widths": {}}
    for N in args.widths:
        spec = task.spec(width=N, temperature=args.temperature)
        ph_tr, ph_te = task.phi("train", spec), task.phi("test", spec)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TheoryWarning)
            full = log_evidence(task, spec)
            stages = evidence_head_selection(spec, ph_tr, task.y_train, ph_te, task.y_test)
            U = np.asarray(full.solution.U)
            y = jnp.asarray(task.y_train)

            def acc_at(Uc, keep=None):
                tr, te = (
                    (ph_tr, ph_te)
                    if keep is None
                    else (subset_phi(ph_tr, spec.heads, keep), subset_phi(ph_te, spec.heads, keep))
                )
                m, _ = predict(jnp.asarray(Uc), tr, te, y, spec.temperature)
                return float(np.mean(np.sign(np.asarray(m)) == task.y_test))

            base = acc_at(U)
            silenced = {names[i]: base - acc_at(silence(U, spec.heads, [k])) for i, k in enumerate(heads)}
            removal = {}
            for i, k in enumerate(heads):
                if spec.heads[k[0]] == 1:  # the only head of its layer: removing it leaves no network
                    continue
                keep = drop_head(spec.heads, [k])
                sub, ph = sub_network(spec, ph_tr, keep)
                e = saddle_log_evidence(sub, ph, task.y_train)
                removal[names[i]] = {
                    "evidence_cost": full.log_evidence - e.log_evidence,
                    "accuracy_drop": base - acc_at(e.solution.U, keep),
                }
        sc_all = np.concatenate(head_scores(U, spec.heads))
        sc_layer = np.concatenate(head_scores(U, spec.heads, normalize="layer"))
        row = {
            "log_evidence_full": full.log_evidence,
            "test_accuracy_full": base,
            "evidence_order": [[names[heads.index(tuple(r))] for r in st["removed"]] for st in stages],
            "stages": [
                {
                    "removed": [names[heads.index(tuple(r))] for r in st["removed"]],
                    "log_evidence": st["log_evidence"],
                    "test_accuracy": st["test_accuracy"],
                }
                for st in stages
            ],
            "scores_all": dict(zip(names, sc_all.tolist())),
            "scores_layer": dict(zip(names, sc_layer.tolist())),
            "score_order_all": [names[i] for i in np.argsort(sc_all, kind="stable")],
            "score_order_layer": [names[i] for i in np.argsort(sc_layer, kind="stable")],
            "silencing_drop": silenced,
            "removal": removal,
        }
        out["widths"][str(N)] = row
        print(
            f"N={N}: evidence order {row['evidence_order'][-1]}, score order {row['score_order_all']}; "
            f"removal costs { ({k: round(v['evidence_cost'], 2) for k, v in removal.items()}) }",
            flush=True,
        )
    fig, axes = plt.subplots(1, len(args.widths), figsize=(5 * len(args.widths), 3.4), squeeze=False)
    for ax, N in zip(axes[0], args.widths):
        r = out["widths"][str(N)]
        x = np.arange(len(names))
        ax.bar(
            x - 0.2,
            [r["removal"][n]["evidence_cost"] if n in r["removal"] else np.nan for n in names],
            0.4,
            label="evidence cost (nats)",
        )
        ax2 = ax.twinx()
        ax2.bar(
            x + 0.2,
            [100 * r["removal"][n]["accuracy_drop"] if n in r["removal"] else np.nan for n in names],
            0.4,
            color="C3",
            label="accuracy drop (points)",
        )
        ax.set_xticks(x, names, fontsize=7)
        ax.set_title(f"single-head removal, N={N} (sub-network re-solved)", fontsize=8)
        ax.set_ylabel("evidence cost (nats)")
        ax2.set_ylabel("theory accuracy drop (points)")
    fig.tight_layout()
    FIG_DIR.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIG_DIR / "head_selection_markov.png", dpi=100)
    tmp = FIG_DIR / "head_selection_markov.json.tmp"
    tmp.write_text(json.dumps(out, indent=1))
    os.replace(tmp, FIG_DIR / "head_selection_markov.json")
    print(f"wrote {FIG_DIR / 'head_selection_markov.json'} and .png")


if __name__ == "__main__":
    main()
