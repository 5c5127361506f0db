"""Figure: attention learned by maximising the evidence on the Markov 4-path task (docs/evidence.md §5).

Start from four random heads (blank(1) of docs/theory.md eq. (9.1f), each head its own seed: two "rand" heads
of one layer drawn from the same seed would be identical and the gradient keeps them so), learn every ``W``
at width ``--width`` by Adam on the saddle-point evidence (:func:`bayes_attn.theory.fit_attention`), then
compare with the hand-built heads (good, rand | unif, rand) and the random start: log evidence, theory test
accuracy vs width, the learned attention (mean over training sequences of each head's attention matrix) and
``U*``.  Writes ``$FIG_DIR/learn_markov.png`` and ``learn_markov.json``.  ``--write-cli DIR`` writes the same start
as inputs of ``bayes-attn fit-attention`` instead (docs/results.md §3.1).
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
HEAD_SEEDS = [(1147, 1148), (1247, 1248)]  # one seed per random head, (layer 1), (layer 2)


def random_heads_task(P, n_test, seeds, beta=10.0, style="w", rank=2, scale=0.15):
    """Hand-built task and a task with four random heads: w-style blank(1) (eq. (9.1f)) or qk-style ``Q, K`` of
    rank ``rank`` with i.i.d. ``N(0, scale^2)`` entries; one seed per head."""
    from bayes_attn.network import HeadLayer
    from bayes_attn.tasks import markov_head_W, markov_task

    base = markov_task(P, n_test, 4)
    if style == "w":
        layers = tuple(
            HeadLayer.w(np.stack([markov_head_W("blank", 1.0, seed=s) for s in pair]), beta, names=("r0", "r1"))
            for pair in seeds
        )
    else:
        n0 = base.n0
        layers = tuple(
            HeadLayer.qk(
                *[
                    np.stack([scale * np.random.default_rng([s, j]).standard_normal((rank, n0)) for s in pair])
                    for j in (0, 1)
                ],
                names=("r0", "r1"),
            )
            for pair in seeds
        )
    from bayes_attn.tasks import Task

    return base, Task(
        base.x_train, base.y_train, base.x_test, base.y_test, layers, name="markov-random", meta=dict(base.meta)
    )


def write_cli_inputs(out: Path, task, val, basis, spec) -> None:
    """The same start as the figure run, as files for ``bayes-attn fit-attention``: the bundle (random heads,
    training/test sets and the validation sequences that the CLI monitors), the basis and a config whose
    ``[network]`` is ``spec`` (width, temperature, readout, variances)."""
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "start.npz", **task.to_npz_dict(), x_val=np.asarray(val[0]), y_val=np.asarray(val[1]))
    if basis is not None:
        np.save(out / "basis.npy", basis)
    from bayes_attn.sweep import to_toml

    network = {
        "width": spec.width,
        "temperature": spec.temperature,
        "readout": spec.readout,
        "variances": [float(v) for v in spec.variances],
    }
    (out / "fit.toml").write_text(to_toml({"data": {"file": "start.npz"}, "network": network}))
    print(f"wrote {out}/start.npz, fit.toml" + (", basis.npy" if basis is not None else ""))


def accuracy_vs_width(task, widths, T, params=None):
    import jax.numpy as jnp

    from bayes_attn.theory import TheoryWarning, attention_params, log_evidence, theory_accuracy

    params = attention_params(task) if params is None else params
    acc, ev = [], []
    for N in widths:
        spec = task.spec(width=N, temperature=T)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TheoryWarning)
            e = log_evidence(task, spec)
        ev.append(e.log_evidence)
        acc.append(theory_accuracy(params, spec, task, jnp.asarray(e.solution.U), task.x_test, task.y_test))
    return acc, ev


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=100)
    ap.add_argument("--temperature", type=float, default=0.01)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--widths", type=int, nargs="+", default=[10, 30, 100, 300, 1000])
    ap.add_argument("--style", default="w", choices=("w", "qk"), help="parametrisation of the learned heads")
    ap.add_argument("--rank", type=int, default=2, help="d_qk of qk-style heads")
    ap.add_argument("--P", type=int, default=100, help="training sequences")
    ap.add_argument(
        "--basis-pcs",
        type=int,
        default=0,
        help="attention reads only the positional code and this many whitened principal directions of "
        "the tokens' content (bayes_attn.tasks.markov_token_basis; 0: every token direction)",
    )
    ap.add_argument("--scale", type=float, default=0.15, help="s.d. of the random Q, K entries (qk-style start)")
    ap.add_argument("--tag", default="", help="suffix of the output names (learn_markov{tag}.*)")
    ap.add_argument(
        "--write-cli",
        default=None,
        metavar="DIR",
        help="write the CLI's inputs instead of fitting: DIR/start.npz (the random-heads bundle with the "
        "validation sequences), DIR/basis.npy (with --basis-pcs) and DIR/fit.toml, for "
        "`bayes-attn fit-attention DIR/fit.toml [--basis DIR/basis.npy] --out ...`",
    )
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (test suite)")
    args = ap.parse_args(argv)
    import jax.numpy as jnp

    import bayes_attn  # noqa: F401
    from bayes_attn.tasks import markov_sequences, markov_token_basis
    from bayes_attn.theory import attention_matrices, fit_attention, with_attention

    P, n_test = (20, 20) if args.smoke else (args.P, 1000)
    if args.smoke:
        args.steps, args.widths, args.width = 1, [10], 10
    hand, rnd = random_heads_task(P, n_test, HEAD_SEEDS, style=args.style, rank=args.rank, scale=args.scale)
    basis = markov_token_basis(rnd.x_train, args.basis_pcs) if args.basis_pcs else None
    val = markov_sequences(50 if args.smoke else 1000, 71, tuple(hand.meta["noise"]))
    spec = rnd.spec(width=args.width, temperature=args.temperature)
    if args.write_cli:
        return write_cli_inputs(Path(args.write_cli), rnd, val, basis, spec)
    t0 = time.time()
    res = fit_attention(rnd, spec, steps=args.steps, lr=args.lr, val=val, eval_every=10, progress=True, basis=basis)
    secs = time.time() - t0
    learned = with_attention(rnd, res.params, name="markov-learned")
    out = {
        "style": args.style,
        "rank": args.rank if args.style == "qk" else None,
        "basis_pcs": args.basis_pcs,
        "n_test": n_test,
        "width": args.width,
        "T": args.temperature,
        "steps": args.steps,
        "lr": args.lr,
        "P": P,
        "seconds": secs,
        "message": res.message,
        "best_step": res.best_step,
        "log_evidence": [e["log_evidence"] for e in res.history],
        "val_accuracy": [e["val_accuracy"] for e in res.history],
        "widths": args.widths,
    }
    for name, t in (("hand", hand), ("random", rnd), ("learned", learned)):
        acc, ev = accuracy_vs_width(t, args.widths, args.temperature)
        out[name] = {"test_accuracy": acc, "log_evidence": ev}
        print(name, "accuracy", acc, "evidence", [round(v, 2) for v in ev], flush=True)
    # learned attention: mean attention matrix of each head over the training sequences; U* at the fit width
    om = [np.asarray(o).mean(axis=0) for o in attention_matrices(res.params, jnp.asarray(rnd.x_train))]
    U = np.asarray(res.U)
    out["U_learned"] = U.tolist()
    FIG_DIR.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 7, figsize=(19, 3.2))
    ax = axes[0]
    ax.plot(out["log_evidence"])
    ax.set_xlabel("step")
    ax.set_ylabel("log evidence (saddle)")
    ax = axes[1]
    for name, mk in (("hand", "o-"), ("random", "s-"), ("learned", "^-")):
        ax.plot(args.widths, 100 * np.array(out[name]["test_accuracy"]), mk, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("N")
    ax.set_ylabel("theory test accuracy (%)")
    ax.legend(fontsize=7)
    for k, (l, h) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
        axes[2 + k].imshow(om[l][h], cmap="viridis", aspect="auto")
        axes[2 + k].set_title(f"learned layer {l + 1} head {h}: mean Omega[s,t]", fontsize=7)
        axes[2 + k].set_xlabel("query t")
        axes[2 + k].set_ylabel("key s")
    v = np.abs(U).max()
    axes[6].imshow(U, cmap="RdBu_r", vmin=-v, vmax=v)
    axes[6].set_title(f"U* learned (N={args.width}); paths r0r0,r0r1,r1r0,r1r1", fontsize=7)
    fig.tight_layout()
    fig.savefig(FIG_DIR / f"learn_markov{args.tag}.png", dpi=100)
    out["mean_attention"] = [o.tolist() for o in om]
    tmp = FIG_DIR / f"learn_markov{args.tag}.json.tmp"
    tmp.write_text(json.dumps(out, default=float))
    os.replace(tmp, FIG_DIR / f"learn_markov{args.tag}.json")
    print(
        f"wrote {FIG_DIR / f'learn_markov{args.tag}.png'} and .json; evidence {out['log_evidence'][0]:.2f} -> "
        f"{max(out['log_evidence']):.2f}; {res.message} in {secs:.0f} s"
    )


if __name__ == "__main__":
    main()
