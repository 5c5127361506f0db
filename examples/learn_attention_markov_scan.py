"""Does more data, a warmer likelihood, a hyperprior or fewer attention features stop the evidence from overfitting
the attention on the Markov 4-path task?  (docs/results.md §3.1, docs/evidence.md §5.)

Every configuration starts from the same four random heads (one seed per head, as in
``learn_attention_markov.py``), learns at width ``N = 100`` with :func:`bayes_attn.theory.fit_attention`, and
records the saddle-point log evidence (E1) at the start, at the best step and for the hand-built heads on the same
training set, the validation accuracy every 10 steps, and the theory's test accuracy of the kept heads.

Configurations (``CONFIGS``): qk-style rank 2 at P in {100, 400, 1000} and T in {0.01, 0.1, 1}; a Gaussian
hyperprior (eq. (E5)) at the scale of the random start; and attention restricted to the tokens' positional code
plus the top-2 principal directions of their content, whitened (``bayes_attn.tasks.markov_token_basis``,
label-free), for qk- and w-style heads.  Writes ``$FIG_DIR/learn_markov_scan.json`` (one entry per configuration, merged under a file lock so that
``--only`` runs in two processes can share it).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
FIG_DIR = Path(os.environ.get("FIG_DIR", "docs/figures"))

#: name -> (style, P, T, prior_scale, basis components (0: none), Adam lr, steps, d_qk); "qk" = rank 2
CONFIGS = {
    "qk P=100 T=0.01": ("qk", 100, 0.01, None, 0, 0.01, 60, 2),
    "qk P=100 T=0.1": ("qk", 100, 0.1, None, 0, 0.01, 60, 2),
    "qk P=400 T=0.1": ("qk", 400, 0.1, None, 0, 0.01, 60, 2),
    "qk P=1000 T=0.1": ("qk", 1000, 0.1, None, 0, 0.01, 60, 2),
    "qk P=400 T=1": ("qk", 400, 1.0, None, 0, 0.01, 60, 2),
    "qk P=400 T=0.1 prior 0.15": ("qk", 400, 0.1, 0.15, 0, 0.01, 60, 2),
    "qk P=400 T=0.1 basis pos+PC2": ("qk", 400, 0.1, None, 2, 0.01, 60, 2),
    "w P=400 T=0.1 basis pos+PC2": ("w", 400, 0.1, None, 2, 0.2, 60, 2),
    "qk P=400 T=0.1 basis pos+PC2, 300 steps": ("qk", 400, 0.1, None, 2, 0.01, 300, 2),
    "qk rank 4 P=400 T=0.1 basis pos+PC2, 300 steps": ("qk", 400, 0.1, None, 2, 0.03, 300, 4),
    "qk rank 4 P=1000 T=0.1 basis pos+PC2, 200 steps": ("qk", 1000, 0.1, None, 2, 0.03, 200, 4),
    "qk rank 16 P=400 T=0.1 basis pos+PC2, 300 steps": ("qk", 400, 0.1, None, 2, 0.03, 300, 16),
    # the sampled-attention comparison (docs/attention.md): P = 100, the rank 4 of the best run above and the
    # full rank 33 of the basis, which the sampled runs use
    "qk rank 4 P=100 T=0.1 basis pos+PC2, 300 steps": ("qk", 100, 0.1, None, 2, 0.03, 300, 4),
    "qk rank 33 P=100 T=0.1 basis pos+PC2, 300 steps": ("qk", 100, 0.1, None, 2, 0.03, 300, 33),
}


def run_config(name, cfg, width, n_test, smoke):
    import jax.numpy as jnp

    from bayes_attn.tasks import markov_sequences, markov_token_basis
    from bayes_attn.theory import fit_attention, theory_accuracy
    from learn_attention_markov import HEAD_SEEDS, accuracy_vs_width, random_heads_task

    style, P, T, prior, k, lr, steps, rank = cfg
    if smoke:
        P, steps, width = 20, 2, 10
    hand, rnd = random_heads_task(P, n_test, HEAD_SEEDS, style=style, rank=rank)
    val = markov_sequences(n_test, 71, tuple(hand.meta["noise"]))
    spec = rnd.spec(width=width, temperature=T)
    (acc_hand,), (ev_hand,) = accuracy_vs_width(hand, [width], T)
    basis = markov_token_basis(rnd.x_train, k) if k else None
    t0 = time.time()
    res = fit_attention(rnd, spec, steps=steps, lr=lr, val=val, eval_every=10, prior_scale=prior, basis=basis)
    secs = time.time() - t0
    h = res.history
    val_acc = [e["val_accuracy"] for e in h if e["val_accuracy"] is not None]
    acc = theory_accuracy(res.params, spec, rnd, jnp.asarray(res.U), rnd.x_test, rnd.y_test)
    out = {
        "style": style,
        "rank": rank if style == "qk" else None,
        "P": P,
        "T": T,
        "prior_scale": prior,
        "basis_components": k,
        "lr": lr,
        "steps": steps,
        "width": width,
        "seconds": secs,
        "message": res.message,
        "best_step": res.best_step,
        "log_evidence_start": h[0]["log_evidence"],
        "log_evidence_best": h[res.best_step]["log_evidence"],
        "objective": [e["objective"] for e in h],
        "log_evidence": [e["log_evidence"] for e in h],
        "log_evidence_hand": ev_hand,
        "test_accuracy_hand": acc_hand,
        "val_accuracy": val_acc,
        "test_accuracy_learned": acc,
        "n_test": n_test,
    }
    print(
        f"{name}: ln Z {out['log_evidence_start']:.1f} -> {out['log_evidence_best']:.1f} (hand "
        f"{ev_hand:.1f}); val {100 * val_acc[0]:.1f}% -> {100 * val_acc[-1]:.1f}% (max "
        f"{100 * max(val_acc):.1f}%); test {100 * acc:.1f}% (hand {100 * acc_hand:.1f}%); {secs:.0f} s",
        flush=True,
    )
    return out


def merge(path: Path, name: str, entry: dict) -> None:
    """Add ``entry`` under ``name`` to the JSON file at ``path`` (read-modify-replace under an exclusive lock)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent, os.O_RDONLY)  # the lock is on the directory: no lock file is left behind
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = json.loads(path.read_text()) if path.is_file() else {}
        data[name] = entry
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1, default=float))
        os.replace(tmp, path)
    finally:
        os.close(fd)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", type=int, nargs="*", default=None, help="indices into CONFIGS (default: all)")
    ap.add_argument("--width", type=int, default=100)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, two configurations (test suite)")
    args = ap.parse_args(argv)
    import bayes_attn  # noqa: F401  (float64)

    names = list(CONFIGS)
    idx = [0, len(names) - 1] if args.smoke else (range(len(names)) if args.only is None else args.only)
    n_test = 40 if args.smoke else 1000
    for i in idx:
        merge(
            FIG_DIR / "learn_markov_scan.json",
            names[i],
            run_config(names[i], CONFIGS[names[i]], args.width, n_test, args.smoke),
        )
    print(f"wrote {FIG_DIR / 'learn_markov_scan.json'}")


if __name__ == "__main__":
    main()
