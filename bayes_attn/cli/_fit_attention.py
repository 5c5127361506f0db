"""``bayes-attn fit-attention CONFIG.toml --out BUNDLE.npz [--steps K] [--lr LR] [--exact] [--prior-scale S] [--basis B.npy]``.

Maximises the log evidence over the attention parameters of every head (w-style ``W`` or qk-style ``Q, K`` at
the rank of the config's heads, starting from them) with ``optax.adam`` (docs/evidence.md §5,
:func:`bayes_attn.theory.fit_attention`).  Validation accuracy of the theory's predictor is monitored on
``x_val``/``y_val`` of a bundle, or on fresh sequences of the Markov task (``--seed-val``).

Writes ``BUNDLE.npz`` (the task with the learned attention of the best objective -- the evidence, or with
``--prior-scale`` the evidence plus the log hyperprior; a ``[data] file`` for ``bayes-attn theory`` and
``bayes-attn sample``) and ``BUNDLE.json`` with ``log_evidence`` (one value per step), ``log_prior``,
``objective``, ``val_accuracy``, ``test_accuracy_initial`` (at the start of the fit: the config's heads, projected
on span(B) with ``--basis``), ``test_accuracy_final``, ``best_step``, ``message`` and the settings.  A diverging optimisation stops with a message, keeps the best bundle so far and exits 1.
"""

from __future__ import annotations

import sys
from pathlib import Path


#: the library's names of the settings this command passes on, and their flags
FLAGS = {
    "steps": "--steps",
    "lr": "--lr",
    "n_pairs": "--pairs",
    "eval_every": "--eval-every",
    "prior_scale": "--prior-scale",
    "basis": "--basis",
}


def register(sub) -> None:
    p = sub.add_parser("fit-attention", help="learn the attention by maximising the evidence (bundle out)")
    p.add_argument("config", help="TOML config ([data], [network] with one width and temperature)")
    p.add_argument("--out", required=True, help="output bundle .npz (and .json beside it)")
    p.add_argument("--steps", type=int, default=100, help="optimisation steps (default 100)")
    p.add_argument("--lr", type=float, default=0.01, help="Adam learning rate (default 0.01)")
    p.add_argument("--exact", action="store_true", help="exact finite-N evidence and Fisher gradient")
    p.add_argument("--pairs", type=int, default=500, help="importance-sampling pairs per step (--exact)")
    p.add_argument("--eval-every", type=int, default=10, help="validation accuracy every this many steps")
    p.add_argument("--seed-val", type=int, default=71, help="seed of the Markov validation sequences")
    p.add_argument("--n-val", type=int, default=1000, help="Markov validation sequences")
    p.add_argument(
        "--prior-scale",
        type=float,
        default=None,
        help="Gaussian hyperprior N(0, S^2) on every attention parameter (type-II MAP, docs/evidence.md "
        "eq. (E5)); default none (type-II maximum likelihood)",
    )
    p.add_argument(
        "--basis",
        default=None,
        help=".npy file with an (n0, m) matrix of full column rank: the attention reads only the token "
        "directions of its columns (docs/evidence.md §5)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _validation(cfg, task, args):
    import numpy as np

    if cfg.data.file is not None:
        with np.load(cfg.base_dir / cfg.data.file, allow_pickle=False) as z:
            if "x_val" in z.files and "y_val" in z.files:
                return np.asarray(z["x_val"], float), np.asarray(z["y_val"], float)
        return None
    from ..tasks import markov_sequences

    return markov_sequences(args.n_val, args.seed_val, tuple(task.meta["noise"]))


def _basis(path):
    """The ``--basis`` matrix (a 2-D finite ``.npy`` array), or None; its shape is checked against the task later."""
    from .._io import read_matrix

    return None if path is None else read_matrix(path, field="--basis")


def run(args) -> int:
    import warnings

    import jax.numpy as jnp

    from .._errors import nonnegative_int, positive, renamed, require
    from ..theory import (
        TheoryWarning,
        attention_params,
        check_basis,
        check_fit_settings,
        check_widths,
        fit_attention,
        project_attention,
        solve,
        theory_accuracy,
        with_attention,
    )
    from .._io import atomic_savez, atomic_write_json
    from ._evidence import load_run_config

    settings = dict(
        steps=args.steps, lr=args.lr, n_pairs=args.pairs, eval_every=args.eval_every, prior_scale=args.prior_scale
    )
    with renamed(FLAGS):  # the library checks its own settings (and the basis), named by its flags here
        check_fit_settings(**settings)
    positive(args.n_val, "--n-val", integer=True)
    nonnegative_int(args.seed_val, "--seed-val")
    basis = _basis(args.basis)
    out = Path(args.out)
    require(out.suffix == ".npz", "--out", f"must end in .npz, got {args.out!r}")
    cfg = load_run_config(args.config)
    task = cfg.task()
    spec = cfg.spec(task)
    params0 = attention_params(task)  # InputError for user-supplied attention arrays
    if basis is not None:  # the start of the fit: the config's heads projected on span(basis)
        with renamed(FLAGS):
            params0 = project_attention(params0, check_basis(basis, task.x_train.shape[-1]))
    if args.exact:
        check_widths(spec)
    val = _validation(cfg, task, args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TheoryWarning)
        sol0 = solve(spec, with_attention(task, params0).phi("train", spec), task.y_train)
    acc0 = theory_accuracy(params0, spec, task, sol0.U, task.x_test, task.y_test)
    res = fit_attention(task, spec, exact=args.exact, val=val, progress=not args.no_progress, basis=basis, **settings)
    learned = with_attention(task, res.params, name=f"{task.name}-evidence")
    acc1 = theory_accuracy(res.params, spec, task, jnp.asarray(res.U), task.x_test, task.y_test)
    arrays = learned.to_npz_dict()
    if val is not None:
        arrays.update(x_val=val[0], y_val=val[1])
    atomic_savez(out, field="--out", **arrays)
    h = res.history
    summary = {
        "log_evidence": [e["log_evidence"] for e in h],
        "log_evidence_mcse": [e["log_evidence_mcse"] for e in h],
        "log_evidence_saddle": [e["log_evidence_saddle"] for e in h],
        "leading": [e["leading"] for e in h],
        "grad_norm": [e["grad_norm"] for e in h],
        "val_accuracy": [e["val_accuracy"] for e in h],
        "log_prior": [e["log_prior"] for e in h],
        "objective": [e["objective"] for e in h],
        "test_accuracy_initial": acc0,
        "test_accuracy_final": acc1,
        "best_step": res.best_step,
        "message": res.message,
        "diverged": res.diverged,
        "settings": {
            "steps": args.steps,
            "lr": args.lr,
            "exact": args.exact,
            "pairs": args.pairs,
            "prior_scale": args.prior_scale,
            "basis": args.basis,
            "basis_shape": None if basis is None else list(basis.shape),
            "optimizer": "optax.adam",
            "widths": list(spec.widths),
            "temperature": spec.temperature,
            "styles": [layer.style for layer in task.layers],
            "rank": [int(layer.params["Q"].shape[1]) if layer.style == "qk" else None for layer in task.layers],
            "validation": None if val is None else len(val[1]),
            "config": cfg.text,
        },
    }
    atomic_write_json(out.with_suffix(".json"), summary, field="--out")
    print(
        f"wrote {out} and {out.with_suffix('.json')}: log evidence {h[0]['log_evidence']:.4f} -> "
        f"{h[res.best_step]['log_evidence']:.4f} (best step {res.best_step}); theory test accuracy "
        f"{100 * acc0:.1f}% -> {100 * acc1:.1f}%; {res.message}"
    )
    if res.diverged:
        print(f"error: fit-attention {res.message}; kept the best bundle (step {res.best_step})", file=sys.stderr)
        return 1
    return 0
