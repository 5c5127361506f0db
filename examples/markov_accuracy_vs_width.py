"""Figure: accuracy of the mean predictor vs width on the hidden-Markov task (theory.md §9.1, item 1).

Theory at every width, sampled networks (exact order-parameter posterior, ``model =
"order_parameters"``, NUTS, several chains; error bars = s.e. of the per-chain accuracies) at
``--sample-widths``, GP lines for all paths, the good path alone and good + denoising.  ``T`` per
width is chosen on a validation set (examples/_common.py); the test-selected value is recorded too.
The sampled widths run as a sweep (bayes_attn.sweep: widths x the selected temperatures, on
``--workers`` Dask worker processes, resumable and idempotent) in ``$RUN_DIR/markov{paths}/sweep``.

    python examples/markov_accuracy_vs_width.py                # 4 paths
    python examples/markov_accuracy_vs_width.py --paths 2      # "noisier data", g + d
    python examples/markov_accuracy_vs_width.py --data-seeds 0 1 2   # replicates, mean ± s.d.

Writes ``$FIG_DIR/markov{paths}_accuracy_vs_width.png``, ``$RUN_DIR/markov{paths}/`` (runs, a
theory file in the ``bayes-attn report --theory`` layout, ``results.json``).  Replicate ``k > 0``
(data and head seeds of ``_common.markov_seeds(k)``) goes to ``$RUN_DIR/markov{paths}_seed{k}/``;
with several ``--data-seeds`` the script also writes ``markov{paths}_accuracy_vs_width_seeds.png``
and ``.json``: theory and sampled accuracy as mean ± s.d. over the replicates (theory.md §8)
and, per width, whether the theory mean lies within the sampled error bar.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paths", type=int, default=4, choices=(4, 2))
    ap.add_argument("--P", type=int, default=100)
    ap.add_argument("--widths", type=int, nargs="+", default=[10, 30, 50, 100, 300, 500, 1000])
    ap.add_argument("--temps", type=float, nargs="+", default=[0.001, 0.003, 0.01, 0.03, 0.1])
    ap.add_argument("--sample-widths", type=int, nargs="*", default=[10, 30, 100, 1000])
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0, help="sampler seed")
    ap.add_argument(
        "--workers",
        type=int,
        default=None,
        help="Dask worker processes of the sampling sweep (default: the number of cores; 0 = in process)",
    )
    ap.add_argument(
        "--data-seeds",
        type=int,
        nargs="+",
        default=[0],
        help="data/head seed replicates (0 = the authors' seeds; see _common.markov_seeds)",
    )
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (test suite)")
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="reuse $RUN_DIR/markov{paths}/theory.nc (same widths/T grid); sampled cells are reused by "
        "the sweep whenever their config is unchanged",
    )
    ap.add_argument(
        "--config",
        help="TOML file whose [experiment] table sets these options (keys as above, "
        "'-' -> '_'); command-line options given explicitly still win",
    )
    args = ap.parse_args(argv)
    if args.config:
        import tomllib

        with open(args.config, "rb") as fh:
            table = tomllib.load(fh).get("experiment", {})
        unknown = sorted(set(table) - set(vars(args)))
        if unknown:
            ap.error(f"experiment.{unknown[0]}: unknown key in {args.config}")
        ap.set_defaults(**table)
        args = ap.parse_args(argv)
    n_test = n_val = 1000
    if args.smoke:
        args.P, args.widths, args.temps, args.sample_widths = 10, [10, 100], [0.01, 0.1], [10]
        args.chains, args.warmup, args.draws, n_test, n_val = 2, 30, 30, 8, 8
        args.data_seeds, args.workers = [0, 1], 0

    results = {k: replicate(args, k, n_test, n_val) for k in args.data_seeds}
    if len(results) > 1:
        aggregate(args, results)


def replicate(args, k: int, n_test: int, n_val: int) -> dict:
    """Theory scan, GP baselines and sampled widths for data/head seed replicate ``k``."""
    import xarray as xr

    from _common import (
        FIG_DIR,
        RUN_DIR,
        gp_U,
        markov_seeds,
        markov_sets,
        mse,
        predict,
        save_json,
        savefig,
        select,
        solve_theory,
    )
    from bayes_attn.diagnostics import accuracy_error, chain_accuracies, run_gaps
    from bayes_attn.diagnostics._plots import accuracy_vs_width
    from bayes_attn.inference import read_run
    from bayes_attn.sweep import build_sweep, cell_files, run_sweep
    from bayes_attn.theory import read_theory

    out = RUN_DIR / (f"markov{args.paths}" + (f"_seed{k}" if k else ""))
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    seeds = markov_seeds(k)
    task, val = markov_sets(args.paths, P=args.P, n_test=n_test, n_val=n_val, **seeds)
    print(f"replicate {k} {seeds}: data ready ({time.time() - t0:.0f} s): paths {task.path_labels}")

    # ---- theory over width x temperature ------------------------------------------------------
    W, T = args.widths, args.temps
    acc = np.zeros((len(W), len(T)))
    vacc, vmse = np.zeros_like(acc), np.zeros_like(acc)
    Us = np.zeros((len(W), len(T), len(task.path_labels), len(task.path_labels)))
    means = np.zeros((len(W), len(T), task.n_test))
    status = np.zeros((len(W), len(T)), dtype=bool)
    reuse = args.reuse and (out / "theory.nc").is_file()
    if reuse:
        old = xr.load_dataset(out / "theory.nc", engine="h5netcdf")
        assert list(old.width.values) == W and np.allclose(old.temperature.values, T), "grid differs from theory.nc"
        acc, vacc, Us = old["accuracy"].values, old["val_accuracy"].values, old["U"].values
        means, status = old["predictor_mean"].values, old["solver_ok"].values.astype(bool)
        # files written before val_mse was stored: ties go to the smaller T
        vmse = old["val_mse"].values if "val_mse" in old else np.zeros_like(acc)
        print(f"reusing {out / 'theory.nc'}")
    for j, temp in enumerate([] if reuse else T):
        init = None
        for i, N in reversed(list(enumerate(W))):  # warm start from the neighbouring larger N
            spec = task.spec(width=N, temperature=temp, readout="last")
            sol = solve_theory(spec, task, init=init)
            init, status[i, j] = [np.asarray(u) for u in sol.Us], sol.status.ok
            Us[i, j] = np.asarray(sol.U)
            means[i, j], _, acc[i, j] = predict(task, spec, sol.U)
            mv, _, vacc[i, j] = predict(val, spec, sol.U)
            vmse[i, j] = mse(val, mv)
        print(f"theory T={temp}: test acc {np.round(100 * acc[:, j], 1)} (val {np.round(100 * vacc[:, j], 1)})")
    sel = [select({j: (vacc[i, j], vmse[i, j]) for j in range(len(T))}) for i in range(len(W))]

    # ---- GP baselines (all paths, g only, g + d), T on validation -------------------------------
    gp = {}
    subsets = {"GP all paths": args.paths, "GP good path": "good"}
    if args.paths == 4:
        subsets["GP good + denoising"] = "good+denoising"
    gp_acc_T = {}
    for label, paths in subsets.items():
        # same data (noise strengths) as the network: only the heads differ
        t_sub, v_sub = (
            (task, val)
            if paths == args.paths
            else markov_sets(paths, P=args.P, n_test=n_test, n_val=n_val, like=(task, val), **seeds)
        )
        scores, tests = {}, {}
        for temp in T:
            spec = t_sub.spec(width=W[0], temperature=temp, readout="last")
            mv, _, va = predict(v_sub, spec, gp_U(spec))
            _, _, ta = predict(t_sub, spec, gp_U(spec))
            scores[temp], tests[temp] = (va, mse(v_sub, mv)), ta
        Tsel = select(scores)
        gp[label] = {
            "T": Tsel,
            "test_accuracy": tests[Tsel],
            "val_accuracy": scores[Tsel][0],
            "test_selected_accuracy": max(tests.values()),
        }
        gp_acc_T[label] = [tests[t] for t in T]
        print(f"{label}: T={Tsel}, test acc {100 * tests[Tsel]:.1f}%")

    # ---- theory file (report layout) -------------------------------------------------------------
    ds = xr.Dataset(
        {
            "U": (("width", "temperature", "path", "path_"), Us),
            "predictor_mean": (("width", "temperature", "test"), means),
            "accuracy": (("width", "temperature"), acc),
            "val_accuracy": (("width", "temperature"), vacc),
            "solver_ok": (("width", "temperature"), status.astype(int)),
            "val_mse": (("width", "temperature"), vmse),
        }
        | {
            "gp_accuracy_" + k.split("GP ")[1].replace(" + ", "_").replace(" ", "_"): (("temperature",), v)
            for k, v in gp_acc_T.items()
        },
        coords={"width": W, "temperature": T, "path": task.path_labels, "path_": task.path_labels},
    )
    if not reuse:
        ds.to_netcdf(out / "theory.nc", engine="h5netcdf")

    # ---- sampling at the selected T: one sweep (widths x selected temperatures) -----------------
    sampled = {}
    if args.sample_widths:
        temps = sorted({T[sel[W.index(N)]] for N in args.sample_widths})
        raw = {
            "data": {
                "task": "markov",
                "P": args.P,
                "n_test": n_test,
                "paths": args.paths,
                **{key: (list(v) if isinstance(v, tuple) else v) for key, v in seeds.items() if key != "seed_val"},
            },
            "network": {"width": args.sample_widths[0], "temperature": temps[0], "readout": "last"},
            "model": {"kind": "order_parameters"},
            "sampler": {
                "kind": "nuts",
                "chains": args.chains,
                "warmup": args.warmup,
                "draws": args.draws,
                "seed": args.seed,
                "progress_bar": False,
            },
            "sweep": {"network.width": list(args.sample_widths), "network.temperature": temps},
        }
        if "noise" in task.meta and list(task.meta["noise"]) != [1.0, 1.0, 1.0]:
            raw["data"]["noise"] = list(task.meta["noise"])
        sweep = build_sweep(raw, out, text=f"# examples/markov_accuracy_vs_width.py, replicate {k}\n")
        ts = time.time()
        run_sweep(sweep, out / "sweep", workers=args.workers, progress=True)
        print(f"sweep of {len(sweep.cells)} cells: {time.time() - ts:.0f} s")
        for N in args.sample_widths:
            i = W.index(N)
            temp = T[sel[i]]
            cell = next(c for c in sweep.cells if c.values == (N, temp))
            run_file, theory_file, _ = cell_files(out / "sweep" / "cells", cell.name)
            if not run_file.is_file():
                print(f"sampled N={N} T={temp}: the sweep cell failed (see {out / 'sweep' / 'sweep.nc'})")
                continue
            dt, th = read_run(run_file), read_theory(theory_file)
            g = run_gaps(th, dt, name=cell.name)  # with the verdict of diagnostics.summarize
            acc_c = chain_accuracies(dt)
            sampled[N] = {
                "T": temp,
                "accuracy": g["acc_sampled"],
                "chain_acc_mean": float(np.mean(acc_c)),
                "chain_acc_sd": float(np.std(acc_c)),
                "chain_acc_se": accuracy_error(acc_c),
                "theory_accuracy": float(acc[i, sel[i]]),
                "rel_err_mean": g["mean_rel_err"],
                "max_abs_U_gap": float(np.max(np.abs(g["_U_sampled"] - g["_U_theory"]))),
                "rhat_max": g["max_rhat"],
                "ess_bulk_min": g["min_ess_bulk"],
                "divergences": g["divergences"],
                "passed": g["converged"],
                "seconds": float(dt.attrs["wall_time_s"]),
                "cell": str(run_file),
            }
            print(
                f"sampled N={N} T={temp}: acc {100 * g['acc_sampled']:.1f}% (theory {100 * acc[i, sel[i]]:.1f}%), "
                f"rel err of <f> {g['mean_rel_err']:.3f}, max R-hat {g['max_rhat']:.4f}, "
                f"{'PASS' if g['converged'] else 'FAIL'}"
            )

    # ---- figure + numbers ---------------------------------------------------------------------------
    th_sel = [acc[i, sel[i]] for i in range(len(W))]
    pts = None
    if sampled:
        Ns = list(sampled)
        pts = {
            "sampled (order parameters, ± s.e. over chains)": (
                np.array(Ns),
                np.array([sampled[n]["accuracy"] for n in Ns]),
                np.array([sampled[n]["chain_acc_se"] for n in Ns]),
            )
        }
    fig = accuracy_vs_width(
        {"theory": (W, th_sel)},
        pts,
        {name: v["test_accuracy"] for name, v in gp.items()},
        title=f"hidden-Markov, {args.paths} paths, P={args.P}, T chosen on validation"
        + (f", replicate {k}" if k else ""),
    )
    ax = fig.axes[0]
    ax.plot(W, 100 * acc.max(axis=1), ":", color="C0", lw=1, label="theory, T chosen on test")
    ax.legend(fontsize=7)
    if k == 0:
        savefig(fig, f"markov{args.paths}_accuracy_vs_width.png")
    else:
        fig.savefig(out / "accuracy_vs_width.png", dpi=110, bbox_inches="tight")
    res = {
        "paths": args.paths,
        "P": args.P,
        "data_seed": k,
        "seeds": seeds,
        "widths": W,
        "temperatures": T,
        "selected_T": [T[s] for s in sel],
        "theory_test_accuracy": th_sel,
        "theory_test_accuracy_T0.01": acc[:, T.index(0.01)].tolist() if 0.01 in T else None,
        "theory_test_selected_accuracy": acc.max(axis=1).tolist(),
        "theory_val_accuracy": [vacc[i, sel[i]] for i in range(len(W))],
        "solver_ok": status.tolist(),
        "gp": gp,
        "sampled": {str(k): v for k, v in sampled.items()},
        "accuracy_grid": acc.tolist(),
        "val_accuracy_grid": vacc.tolist(),
        "seconds": time.time() - t0,
    }
    save_json(res, out / "results.json")
    if k == 0:
        save_json(res, FIG_DIR / f"markov{args.paths}_accuracy_vs_width.json")
    return res


def aggregate(args, results: dict) -> None:
    """Mean ± s.d. over replicates (theory.md §8): theory curve, sampled points, GP lines.

    Gate per sampled width: the theory mean lies within the sampled error bar
    (s.d. over replicates of the per-replicate sampled accuracy).  The paired difference
    sampled − theory (mean ± standard error over replicates) is stored too: it is the sharper
    test of the O(1/N) finite-size correction, which the error-bar gate cannot resolve.
    """
    import matplotlib.pyplot as plt

    from _common import FIG_DIR, save_json, savefig

    ks = list(results)
    W = results[ks[0]]["widths"]
    th = np.array([results[k]["theory_test_accuracy"] for k in ks])  # (replicates, widths)
    Ns = [int(n) for n in results[ks[0]]["sampled"]]
    sa = np.array([[results[k]["sampled"][str(n)]["accuracy"] for n in Ns] for k in ks])
    th_at = th[:, [W.index(n) for n in Ns]]
    diff = sa - th_at
    n_rep = len(ks)
    gp_labels = list(results[ks[0]]["gp"])
    gp = {lab: np.array([results[k]["gp"][lab]["test_accuracy"] for k in ks]) for lab in gp_labels}
    rows = []
    for j, n in enumerate(Ns):
        m_s, sd_s, m_t = sa[:, j].mean(), sa[:, j].std(ddof=1), th_at[:, j].mean()
        rows.append(
            {
                "width": n,
                "sampled_mean": m_s,
                "sampled_sd": sd_s,
                "theory_mean": m_t,
                "theory_sd": th_at[:, j].std(ddof=1),
                "within_error_bar": bool(abs(m_s - m_t) <= sd_s),
                "paired_diff_mean": diff[:, j].mean(),
                "paired_diff_se": diff[:, j].std(ddof=1) / np.sqrt(n_rep),
                "rhat_max": max(results[k]["sampled"][str(n)]["rhat_max"] for k in ks),
            }
        )
    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    m, sd = 100 * th.mean(0), 100 * th.std(0, ddof=1)
    ax.plot(W, m, "o-", color="C0", label=f"theory (mean of {n_rep})")
    ax.fill_between(W, m - sd, m + sd, color="C0", alpha=0.2, lw=0)
    ax.errorbar(
        Ns,
        100 * sa.mean(0),
        yerr=100 * sa.std(0, ddof=1),
        fmt="s",
        color="C1",
        capsize=3,
        label="sampled (wishart), mean ± s.d.",
    )
    for i, lab in enumerate(gp_labels):
        ax.axhline(100 * gp[lab].mean(), ls="--", lw=1, color=f"C{i + 4}", label=lab)
    ax.set_xscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(f"hidden-Markov, {args.paths} paths, P={args.P}: {n_rep} data/head seeds, band = ± s.d.", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    savefig(fig, f"markov{args.paths}_accuracy_vs_width_seeds.png")
    out = {
        "paths": args.paths,
        "data_seeds": ks,
        "widths": W,
        "theory_mean": th.mean(0).tolist(),
        "theory_sd": th.std(0, ddof=1).tolist(),
        "sampled": rows,
        "gp": {lab: {"mean": float(v.mean()), "sd": float(v.std(ddof=1))} for lab, v in gp.items()},
        "selected_T": {str(k): results[k]["selected_T"] for k in ks},
    }
    save_json(out, FIG_DIR / f"markov{args.paths}_accuracy_vs_width_seeds.json")
    for r in rows:
        print(
            f"N={r['width']}: sampled {100 * r['sampled_mean']:.2f} ± {100 * r['sampled_sd']:.2f}, theory "
            f"{100 * r['theory_mean']:.2f}; within error bar: {r['within_error_bar']}; paired diff "
            f"{100 * r['paired_diff_mean']:+.2f} ± {100 * r['paired_diff_se']:.2f} (se)"
        )


if __name__ == "__main__":
    main()
