"""``bayes-attn evidence CONFIG.toml --out EV.json [--exact]``: log evidence of the training labels.

Saddle-point value with its O(1) terms (docs/evidence.md eq. (E1)); with ``--exact`` also the exact finite-N
value by importance sampling on the order-parameter chain (eq. (E2)) and its Monte Carlo standard error.
Reads ``[data]`` and ``[network]`` (one width, one temperature).  JSON keys: ``log_evidence_saddle``,
``saddle_terms``, ``solver_ok``; with ``--exact``: ``log_evidence_exact``, ``log_evidence_exact_mcse``,
``exact_ess``, ``exact_draws``.
"""

from __future__ import annotations

from .._io import atomic_write_json


def load_run_config(path):
    """The run configuration (``[data]``, ``[network]``, ...) through the package's config reader."""
    from ..inference import load_config

    return load_config(path)


def register(sub) -> None:
    p = sub.add_parser("evidence", help="log evidence (marginal likelihood) of the labels: saddle point, exact")
    p.add_argument("config", help="TOML config ([data], [network] with one width and temperature)")
    p.add_argument("--out", required=True, help="output .json")
    p.add_argument("--exact", action="store_true", help="also the exact finite-N evidence (needs N_l >= p_l)")
    p.add_argument("--pairs", type=int, default=4000, help="antithetic importance-sampling pairs (--exact)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args) -> int:
    import warnings

    from .._errors import nonnegative_int, positive
    from ..theory import TheoryWarning, check_widths, exact_log_evidence, log_evidence

    positive(args.pairs, "--pairs", integer=True)
    nonnegative_int(args.seed, "--seed")
    cfg = load_run_config(args.config)
    task = cfg.task()
    spec = cfg.spec(task)
    if args.exact:
        check_widths(spec)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TheoryWarning)
        sad = log_evidence(task, spec)
    for w in caught:
        print(f"warning: {w.message}")
    out = {
        "log_evidence_saddle": sad.log_evidence,
        "saddle_terms": sad.as_dict(),
        "solver_ok": bool(sad.solution.status.ok),
        "widths": list(spec.widths),
        "temperature": spec.temperature,
        "P": task.n_train,
        "config": cfg.text,
    }
    msg = f"saddle-point log evidence {sad.log_evidence:.6f}"
    if args.exact:
        ex = exact_log_evidence(
            task, spec, n_pairs=args.pairs, seed=args.seed, solution=sad.solution, progress=not args.no_progress
        )
        out.update(
            log_evidence_exact=ex.log_evidence,
            log_evidence_exact_mcse=ex.mcse,
            exact_ess=ex.ess,
            exact_draws=ex.n_draws,
            exact_laplace_at_mode=ex.laplace_at_mode,
        )
        msg += f"; exact {ex.log_evidence:.6f} +- {ex.mcse:.2e} (ESS {ex.ess:.0f} of {ex.n_draws})"
    atomic_write_json(args.out, out, field="--out")
    print(f"wrote {args.out}: {msg}")
    return 0
