"""Sampled attention on the hidden-Markov task (docs/attention.md): posterior predictive accuracy against the
hand-built heads, in one script that runs where there is time (hours on 2 CPU cores, minutes on one GPU).

Cases (each ``[model] kind = "attention"``, NUTS or replica-exchange NUTS (``--sampler tempering``), ``--chains``
chains (4), T = 0.1, chains from prior draws, default prior
scale): the GP limit and finite width ``N`` for each ``P``, with the attention reading every token direction
(``basis = none``) or the label-free basis of the 31 positions and the two leading principal directions of the
content part of the training tokens, whitened (``basis = pos_pc2``: :func:`bayes_attn.tasks.markov_token_basis`, the
basis of docs/evidence.md §7).  Each case records the
test accuracy of the sign of the posterior mean of ``f`` on the 1000 test sequences, the gates on ``f``, the
wall time (compilation included), the gradient evaluations and the device; next to them, the theory's accuracy
with the task's hand-built heads at the same ``P``, ``N``, ``T``.  Results go to ``--out`` (JSON, rewritten
after every case), so a run stopped at its deadline keeps what it finished.  ``--budget-s`` sizes each case's
iterations to a time budget from two short timed pilots (a device lent for minutes).

``--task digits``: the in-context digits episodes instead (docs/results.md §2: 16 paths, two layers of four heads,
mean readout, T = 0.25 unless ``--temperature``), every token direction (``--bases none``); the reference next to
each case is the theory at the task's heads, the random queries and keys of the GD network's initialisation
(examples/learn_attention_digits.py), and the GD network's own accuracy comes from docs/figures/learn_digits.json in
the table (scripts/tables/attention_compare_digits.py).

    python benchmarks/attention/run.py --out benchmarks/attention/results.json     # every case
    python benchmarks/attention/run.py --smoke --out /tmp/a.json                   # tiny, CPU (tests)
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np


def hand_built_accuracy(task, spec, gp: bool = False) -> float:
    """Test accuracy of the theory's predictor with the task's heads (saddle point, or the GP limit): the hand-built
    heads here, the GD network's exported Q/K in gd_markov.py."""
    from bayes_attn.theory import gp_predict, predict, solve

    ph_tr, ph_te = task.phi("train", spec), task.phi("test", spec)
    if gp:
        m, _ = gp_predict(spec, ph_tr, ph_te, task.y_train)
    else:
        sol = solve(spec, ph_tr, task.y_train, warn=False)
        m, _ = predict(sol.Us[0], ph_tr, ph_te, task.y_train, spec.temperature)
    return float(np.mean(np.sign(np.asarray(m)) == task.y_test))


def digits_task(P: int, n_eval: int):
    """The digits episodes at ``P`` training episodes with the random queries and keys of the GD network's
    initialisation (examples/learn_attention_digits.py: key 1, two layers of four heads)."""
    import jax

    from bayes_attn import gd
    from bayes_attn.tasks import digits_episodes

    src = digits_episodes()
    sets = src.episode_sets(P=P, n_eval=n_eval, seed=0)
    params = gd.init_params(jax.random.PRNGKey(1), gd.GDConfig(width=8, heads=(4, 4)), src.n0)
    return src.task(gd.export_layers(params), sets, test="test")


def prior_draw_accuracy(task, spec, limit, basis_name, rank, seed, scale=None, draws: int = 4) -> list[float]:
    """Test accuracy of the predictor at independent prior draws of the attention (the chains' starting points):
    "random heads" of the prior the posterior is sampled under."""
    import jax

    from bayes_attn.inference.models import build_model, prior_positions
    from bayes_attn.tasks import markov_token_basis

    B = markov_token_basis(task.x_train, 2) if basis_name == "pos_pc2" else None
    model, args = build_model(
        task, spec, "attention", path_inputs=False, rank=rank, basis=B, attention_scale=scale, limit=limit
    )
    z = prior_positions(model, spec, draws, seed)
    f = jax.vmap(lambda zz: model.derived(zz, args)["f"])(z)
    return [float(np.mean(np.sign(np.asarray(fi)) == task.y_test)) for fi in f]


def run_case(
    task, spec, limit, basis_name, rank, warmup, draws, seed, scale=None, chains: int = 4, sampler: dict | None = None
) -> dict:
    """One sampled case; ``sampler``: the sampler's settings (``kind``, ``replicas``, ``beta_min``, ...; NUTS when
    empty)."""
    import arviz as az
    import jax

    from bayes_attn.diagnostics import exchange_summary
    from bayes_attn.inference import SamplerConfig, sample
    from bayes_attn.tasks import markov_token_basis

    B = markov_token_basis(task.x_train, 2) if basis_name == "pos_pc2" else None
    cfg = SamplerConfig(
        **(sampler or {}),
        attention_scale=scale,
        model="attention",
        rank=rank,
        limit=limit,
        chains=chains,
        warmup=warmup,
        draws=draws,
        seed=seed,
        progress_bar=False,
        checkpoint_every=max(draws // 4, 1),
    )
    t0 = time.perf_counter()
    dt = sample(task, spec, cfg, basis=B)
    wall = time.perf_counter() - t0
    f = dt["posterior"].ds["f"]
    st, wst = dt["sample_stats"].ds, dt["warmup_sample_stats"].ds
    mean = f.mean(("chain", "draw")).values
    per_chain = [float(np.mean(np.sign(f.sel(chain=c).mean("draw").values) == task.y_test)) for c in f.chain.values]
    maps = {
        k: dt["posterior"].ds[k].mean(("chain", "draw")).values
        for k in dt["posterior"].ds
        if k.startswith("attention_")
    }
    return maps, {
        "task": task.name,
        "limit": limit,
        "sampler": cfg.kind,
        **({"replicas": cfg.replicas, "beta_min": cfg.beta_min} if cfg.kind == "tempering" else {}),
        "width": None if limit == "gp" else int(spec.widths[0]),
        "basis": basis_name,
        "rank": rank,
        "P": int(task.x_train.shape[0]),
        "temperature": float(spec.temperature),
        "chains": chains,
        "warmup": warmup,
        "draws": draws,
        "accuracy": float(np.mean(np.sign(mean) == task.y_test)),
        "accuracy_per_chain": per_chain,
        # the mean log density per chain: chains at different levels sit in different modes (not slow mixing)
        "lp_per_chain": [float(v) for v in st["lp"].mean("draw").values],
        "max_rhat_f": float(az.rhat(f).max()),
        "min_ess_bulk_f": float(az.ess(f, method="bulk").min()),
        "divergences": int(st["diverging"].sum()),
        **({"mean_swap_rate": float(st["swap_rate"].mean())} if "swap_rate" in st else {}),
        # tempering: where the ladder is thin, and whether the hot rungs' exploration reached the posterior (what
        # diagnose prints, diagnostics.exchange_summary), and the ladder it ended on
        **(
            {
                "pair_swap_rate": [float(v) for v in exchange["pair_swap_rate"]],
                "round_trips_per_chain": [int(v) for v in exchange["round_trips"]],
                "ladder": [float(v) for v in st["ladder"].values[0, -1]],
            }
            if (exchange := exchange_summary(st)) is not None
            else {}
        ),
        "mean_tree_depth": float(st["tree_depth"].mean()),
        "gradients": int(st["n_steps"].sum() + wst["n_steps"].sum()),
        "wall_s": wall,
        "attention_scale": float(dt.attrs["attention_scale"]),
        "device": str(jax.devices()[0]),
    }


#: iterations of the pilot runs that size a budgeted case (warm-up and draws each)
PILOT_ITERATIONS = 20


def budgeted_iterations(
    run, budget_s: float, warmup_share: float, safety: float = 1.3, clock=time.perf_counter
) -> tuple[int, int, dict]:
    """``(warmup, draws, pilot)`` that fill ``budget_s`` seconds: ``run(w, d)`` runs a case; two pilots of
    :data:`PILOT_ITERATIONS` warm-up and draws each (the first compiles, the second does not) give the seconds per
    iteration and the compilation; the case's own compilation (its warm-up length is a static setting) is counted
    again, and the iterations are cut by ``safety``, for trees that deepen after the pilot's first iterations.
    ``clock``: seconds (tests pass a fake one)."""
    n = PILOT_ITERATIONS
    start = clock()
    run(n, n)
    first = clock() - start
    t0 = clock()
    run(n, n)
    per_iteration = (clock() - t0) / (2 * n)
    compile_s = max(first - 2 * n * per_iteration, 0.0)
    spend = budget_s - (clock() - start) - compile_s
    total = max(int(spend / per_iteration / safety), 4 * n)
    warmup = max(int(round(total * warmup_share)), n)
    pilot = {"seconds_per_iteration": per_iteration, "compile_s": compile_s, "budget_s": budget_s}
    print(json.dumps({"pilot": pilot, "warmup": warmup, "draws": total - warmup}), flush=True)
    return warmup, total - warmup, pilot


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--task", choices=("markov", "digits"), default="markov")
    ap.add_argument("--temperature", type=float, default=None, help="default 0.1 (markov), 0.25 (digits)")
    ap.add_argument("--P", type=int, nargs="+", default=[100, 400])
    ap.add_argument("--widths", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--limits", nargs="+", default=["gp", "finite"])
    ap.add_argument("--bases", nargs="+", default=["pos_pc2", "none"])
    ap.add_argument("--rank", type=int, default=2)
    ap.add_argument("--attention-scale", type=float, default=None, help="prior scale (default: the model's)")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--sampler", default="nuts", help="[sampler] kind: nuts or tempering")
    ap.add_argument("--replicas", type=int, default=8, help="tempering: replicas per chain")
    ap.add_argument("--beta-min", type=float, default=0.01, help="tempering: the hottest replica's beta")
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="size each case's warm-up and draws to this many seconds from two timed pilots (the --warmup / --draws "
        "ratio kept)",
    )
    ap.add_argument("--deadline-s", type=float, default=float("inf"), help="start no case after this many seconds")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (the test suite)")
    ap.add_argument(
        "--references-only",
        action="store_true",
        help="only the references (hand-built heads, prior draws of the attention), no sampling",
    )
    args = ap.parse_args(argv)
    import bayes_attn  # noqa: F401  (x64)
    from bayes_attn.tasks import markov_task

    if args.smoke:
        args.P, args.widths, args.warmup, args.draws, n_test = [20], [10], 10, 10, 30
    else:
        n_test = 1000
    t_start = time.perf_counter()
    out = {
        "machine": platform.machine(),
        "cases": [],
        "hand_built": [],
        "prior_draws": [],
        "stopped_at_deadline": False,
    }
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    digits = args.task == "digits"
    if digits and "pos_pc2" in args.bases:
        ap.error("--bases: pos_pc2 is the Markov task's basis; digits runs read every token direction (none)")
    T = args.temperature if args.temperature is not None else (0.25 if digits else 0.1)
    out["task"] = args.task
    for P in args.P:
        task = digits_task(P, n_test) if digits else markov_task(P=P, n_test=n_test, paths=4)
        for limit in args.limits:
            for N in args.widths if limit == "finite" else [args.widths[-1]]:
                spec = task.spec(width=N, temperature=T, **({"readout": "mean"} if digits else {}))
                out["hand_built"].append(
                    {
                        "P": P,
                        "limit": limit,
                        "width": N if limit == "finite" else None,
                        "heads": "random (GD initialisation)" if digits else "hand-built",
                        "accuracy": hand_built_accuracy(task, spec, gp=limit == "gp"),
                    }
                )
                for basis in args.bases:
                    out["prior_draws"].append(
                        {
                            "P": P,
                            "limit": limit,
                            "width": N if limit == "finite" else None,
                            "basis": basis,
                            "rank": args.rank,
                            "accuracy": prior_draw_accuracy(
                                task, spec, limit, basis, args.rank, seed=0, scale=args.attention_scale
                            ),
                        }
                    )
                    if args.references_only:
                        continue
                    if time.perf_counter() - t_start > args.deadline_s:
                        out["stopped_at_deadline"] = True
                        break
                    sampler = (
                        {"kind": args.sampler}
                        if args.sampler != "tempering"
                        else {"kind": "tempering", "replicas": args.replicas, "beta_min": args.beta_min}
                    )
                    common = dict(seed=0, scale=args.attention_scale, chains=args.chains, sampler=sampler)
                    warmup, draws, pilot = args.warmup, args.draws, None
                    if args.budget_s is not None:
                        warmup, draws, pilot = budgeted_iterations(
                            lambda w, d: run_case(task, spec, limit, basis, args.rank, w, d, **common),
                            args.budget_s,
                            args.warmup / (args.warmup + args.draws),
                        )
                    maps, case = run_case(task, spec, limit, basis, args.rank, warmup, draws, **common)
                    if pilot is not None:
                        case["pilot"] = pilot
                    tag = (
                        "digits_" if digits else ""
                    ) + f"P{P}_{'gp' if limit == 'gp' else f'N{N}'}_{basis}_r{args.rank}"
                    tag += "" if args.sampler == "nuts" else f"_{args.sampler}"
                    maps_file = path.with_name(f"{path.stem}_maps_{tag}.npz")
                    np.savez_compressed(maps_file, **maps)
                    case["maps_file"] = maps_file.name
                    out["cases"].append(case)
                    print(json.dumps(case), flush=True)
                    path.write_text(json.dumps(out, indent=1))
    path.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
