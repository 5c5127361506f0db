"""The default head count of factored attention for protein families, chosen on validation PL
(docs/potts_proteins.md §4).

For one family of ``data/families.json``, the alignment is reweighted and split without leaks
(:func:`bayes_attn.families.split_validation`); factored attention is fitted on the training rows with the protein
defaults (:func:`bayes_attn.potts.protein_settings`) at each head count, and its weighted validation PL, wall
time and contact precision (against the family's structure) are recorded.  The default is the head count with
the smallest validation PL, precision only reported.  Results go to ``heads.json`` (merged per family).

    python benchmarks/potts_proteins/heads.py --family rhomboid --heads 32 64 128 256
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from bayes_attn import families  # noqa: E402
from bayes_attn import potts as pt  # noqa: E402
from bayes_attn._io import atomic_write_json  # noqa: E402


def precision(params, aln, fam) -> dict:
    """Precision at the standard cuts (|i - j| >= 6) of the fit's APC scores against the family's structure."""
    K, _ = pt.couplings_and_fields(params)
    scores = families.contact_scores(np.asarray(K, np.float64), aln.alphabet.index("-"))
    contacts, known, _, _ = families.contact_map(HERE / "data" / fam["structure"], fam["chain"], aln.focus_sequence)
    rep = families.precision_at(scores, contacts, known, aln.residues, min_separation=families.MIN_SEPARATION)
    return {cut: v["precision"] for cut, v in rep["cuts"].items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="rhomboid")
    ap.add_argument("--heads", nargs="+", type=int, default=[32, 64, 128, 256])
    ap.add_argument("--max-iter", type=int, help="default: the protein default")
    ap.add_argument("--results", default=str(HERE / "heads.json"))
    args = ap.parse_args(argv)
    fam = {f["name"]: f for f in json.loads((HERE / "data" / "families.json").read_text())["families"]}[args.family]
    aln = families.read_alignment(HERE / "data" / fam["alignment"], focus=fam["focus"])
    w = families.sequence_weights(aln.sequences, families.THETA)
    tr, va = families.split_validation(aln.sequences, families.THETA, seed=0)
    path = Path(args.results)
    res = json.loads(path.read_text()) if path.is_file() else {"families": {}}
    entry = res["families"].setdefault(fam["name"], {"runs": {}})
    entry.update(M=aln.M, L=aln.L, M_eff=float(w.sum()), n_train=int(len(tr)), n_val=int(len(va)))
    for h in args.heads:
        settings = pt.protein_settings("factored", aln.L, float(w[tr].sum()), heads=h)
        if args.max_iter is not None:
            settings = replace(settings, max_iter=args.max_iter)
        t0 = time.time()
        fit = pt.fit_scan(
            jax.random.PRNGKey(0),
            aln.sequences[tr],
            aln.sequences[va],
            aln.C,
            settings,
            weights=w[tr],
            val_weights=w[va],
        )
        run = {
            "heads": h,
            "max_iter": settings.max_iter,
            "seconds": time.time() - t0,
            "val_nll": fit.best["val_nll"],
            "train_objective": fit.best["fit"]["loss"],
            "iterations": fit.best["fit"]["iterations"],
            "precision": precision(fit.params, aln, fam),
        }
        entry["runs"][f"{h}_{settings.max_iter}"] = run
        print(json.dumps(run), flush=True)
        atomic_write_json(path, res)
    runs = [r for r in entry["runs"].values()]
    entry["chosen_heads"] = min(runs, key=lambda r: r["val_nll"])["heads"]
    atomic_write_json(path, res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
