"""Figure: digits one-shot episodes, accuracy vs width with GP line, novel classes and OOD (theory.md §9.2).

A GD network (L=2, H=4, learned Q/K, mean pooling; trained once and cached) supplies fixed
Q/K; the theory then runs at every width on the P training episodes.  ``T`` per width is
chosen on the base-validation episodes; the novel-class and OOD sets reuse it.  Optional
sampled points (``--sample-widths``; exact order-parameter posterior, ``model="order_parameters"``,
needs ``N >= 16``), each with the package's gate verdict and its ``E[U_1]`` against the theory's ``U*`` and
the GD network's ``U_GD`` (``sampled.N.U``; figure ``digits_U_sampled_theory_gd.png``, one colour scale).
Writes ``$FIG_DIR/digits_accuracy_vs_width.png`` and ``.json``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", type=int, nargs="+", default=[10, 30, 100, 300, 1000, 10000])
    ap.add_argument("--temps", type=float, nargs="+", default=[0.01, 0.05, 0.1, 0.25, 0.5, 1.0])
    ap.add_argument("--gd-width", type=int, default=128)
    ap.add_argument("--gd-steps", type=int, default=3000)
    ap.add_argument("--P", type=int, default=600)
    ap.add_argument("--n-eval", type=int, default=1000)
    ap.add_argument("--sample-widths", type=int, nargs="*", default=[])
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument(
        "--thinning", type=int, default=1, help="sampler.thinning: NUTS iterations per stored draw (default 1)"
    )
    ap.add_argument(
        "--init",
        default="theory",
        choices=("theory", "uniform"),
        help="where the Wishart chains start (sampler.init; 'uniform' runs at full tree depth for "
        "minutes on these 16-path problems, docs/wishart.md)",
    )
    ap.add_argument(
        "--chain-method",
        default="sequential",
        help="sampler.chain_method; 'sequential' by default: vectorized chains wait for the longest "
        "tree of the four at every iteration, which on these 16-path problems costs ~2x",
    )
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="read sampled runs already in $RUN_DIR/digits/N*.nc instead of sampling again",
    )
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (test suite)")
    args = ap.parse_args(argv)
    gd_kw = {}
    if args.smoke:
        args.widths, args.temps, args.gd_width, args.gd_steps, args.P, args.n_eval = (
            [16, 100],
            [0.1, 0.5],
            8,
            10,
            20,
            20,
        )
        args.sample_widths, args.chains, args.warmup, args.draws, gd_kw = [16], 2, 20, 20, dict(batch=16)

    from bayes_attn.inference import request_host_devices

    request_host_devices(args.chains)
    import matplotlib

    matplotlib.use("Agg")
    from _common import (
        DIGITS_SETS,
        FIG_DIR,
        RUN_DIR,
        digits_gd,
        digits_tasks,
        gp_U,
        mse,
        predict,
        save_json,
        savefig,
        select,
        solve_theory,
    )
    from bayes_attn import gd
    import arviz as az

    from bayes_attn._errors import require
    from bayes_attn.diagnostics import summarize
    from bayes_attn.inference import SamplerConfig, predictor_statistics, read_run, sample, write_run

    t0 = time.time()
    src, sets, params, info = digits_gd(width=args.gd_width, steps=args.gd_steps, P=args.P, n_eval=args.n_eval, **gd_kw)
    tasks = digits_tasks(src, sets, params)
    gd_acc = {name: gd.accuracy(params, *sets[name]) for name in DIGITS_SETS if name in sets}
    print(f"GD network ({time.time() - t0:.0f} s): " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in gd_acc.items()))

    W, T = args.widths, args.temps
    acc = {name: np.zeros((len(W), len(T))) for name in tasks}
    vmse = np.zeros((len(W), len(T)))
    ok = np.zeros((len(W), len(T)), dtype=bool)
    U_star = {}  # (i, j) -> U_1* of the theory, for the sampled-vs-theory-vs-GD figure
    for j, temp in enumerate(T):
        init = None
        for i, N in reversed(list(enumerate(W))):
            spec = tasks["val"].spec(width=N, temperature=temp, readout="mean")
            sol = solve_theory(spec, tasks["val"], init=init)
            init, ok[i, j] = [np.asarray(u) for u in sol.Us], sol.status.ok
            U_star[i, j] = np.asarray(sol.U)
            for name, task in tasks.items():
                m, _, acc[name][i, j] = predict(task, spec, sol.U)
                if name == "val":
                    vmse[i, j] = mse(task, m)
        print(f"T={temp}: val {np.round(100 * acc['val'][:, j], 1)}, test {np.round(100 * acc['test'][:, j], 1)}")
    sel = [select({j: (acc["val"][i, j], vmse[i, j]) for j in range(len(T))}) for i in range(len(W))]

    gp_scores, gp_acc = {}, {name: {} for name in tasks}
    for temp in T:
        spec = tasks["val"].spec(width=W[0], temperature=temp, readout="mean")
        for name, task in tasks.items():
            m, _, a = predict(task, spec, gp_U(spec))
            gp_acc[name][temp] = a
            if name == "val":
                gp_scores[temp] = (a, mse(task, m))
    T_gp = select(gp_scores)

    def save(sampled):
        """Figure + JSON; called before sampling (theory and GP only) and after it."""
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7.4, 3.8))
        styles = {"test": "C0", "novel": "C1", "ood_noise": "C2", "ood_transpose": "C3"}
        for name, color in styles.items():
            if name not in acc:
                continue
            ax.plot(W, [100 * acc[name][i, sel[i]] for i in range(len(W))], "o-", color=color, label=f"theory, {name}")
            ax.axhline(100 * gp_acc[name][T_gp], ls="--", lw=1, color=color, label=f"GP, {name}")
        for k, (N, s) in enumerate(sampled.items()):
            ax.errorbar(
                [N],
                [100 * s["chain_acc_mean"]],
                yerr=[100 * s["chain_acc_sd"]],
                fmt="s",
                color="k",
                capsize=3,
                label=None if k else f"sampled, test ({args.chains} chains, Wishart)",
            )
        ax.plot(W, 100 * acc["test"].max(axis=1), ":", color="C0", lw=1, label="theory, test, T chosen on test")
        ax.set_xscale("log")
        ax.set_xlabel("width N")
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"digits 1-shot episodes, P={args.P}; GD net test {100 * gd_acc['test']:.1f}%", fontsize=9)
        ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
        fig.tight_layout()
        savefig(fig, "digits_accuracy_vs_width.png")
        res = {
            "widths": W,
            "temperatures": T,
            "selected_T": [T[s] for s in sel],
            "gp_T": T_gp,
            "theory": {name: [acc[name][i, sel[i]] for i in range(len(W))] for name in acc},
            "theory_test_selected": acc["test"].max(axis=1).tolist(),
            "gp": {name: gp_acc[name][T_gp] for name in gp_acc},
            "gp_test_selected": max(gp_acc["test"].values()),
            "gd_accuracy": gd_acc,
            "gd_training": {k: v for k, v in info.items() if k != "history"},
            "solver_ok": ok.tolist(),
            "sampled": {str(k): v for k, v in sampled.items()},
            "accuracy_grid": {k: v.tolist() for k, v in acc.items()},
            "seconds": time.time() - t0,
        }
        save_json(res, RUN_DIR / "digits" / "results.json")
        save_json(res, FIG_DIR / "digits_accuracy_vs_width.json")

    save({})  # the theory part survives a slow or interrupted sampling stage
    sampled, U_maps = {}, {}
    U_gd = np.asarray(gd.u_gd(params))
    for N in args.sample_widths:
        i = W.index(N)
        spec = tasks["test"].spec(width=N, temperature=T[sel[i]], readout="mean")
        cfg = SamplerConfig(
            model="order_parameters",
            chains=args.chains,
            warmup=args.warmup,
            draws=args.draws,
            seed=0,
            thinning=args.thinning,
            progress_bar=not args.smoke,
            init=args.init,
            chain_method=args.chain_method,
        )
        run_file = RUN_DIR / "digits" / f"N{N:05d}.nc"
        if args.reuse and run_file.is_file():
            dt = read_run(run_file)
            require(
                dt.attrs["temperature"] == spec.temperature,
                "--reuse",
                f"{run_file} was sampled at T={dt.attrs['temperature']}, the selected T is {spec.temperature}",
            )
        else:
            dt = sample(tasks["test"], spec, cfg)
            write_run(dt, run_file)
        st = predictor_statistics(dt)
        f = dt["posterior"].ds["f"].values
        ca = [float(np.mean(np.sign(f[c].mean(0)) == tasks["test"].y_test)) for c in range(f.shape[0])]
        sampled[N] = {
            "T": T[sel[i]],
            "accuracy": st["accuracy"],
            "chain_acc_mean": float(np.mean(ca)),
            "chain_acc_sd": float(np.std(ca)),
            "seconds": float(dt.attrs["wall_time_s"]),
            "max_rhat_f_U": max(float(az.rhat(dt["posterior"].ds[[v]])[v].max()) for v in ("f", "U")),
            "chains": int(f.shape[0]),
            "warmup": int(dt.attrs.get("warmup", args.warmup)),
            "draws": int(f.shape[1]),
            "thinning": int(dt.attrs.get("thinning", 1)),
            "gates": _gates(summarize(dt)),
        }
        sampled[N]["U"] = _u_agreement(dt, U_star[i, sel[i]], U_gd)
        draws = dt["posterior"].ds["U"].values
        U_maps[N] = (U_star[i, sel[i]], draws.mean(axis=(0, 1)), draws.std(axis=(0, 1)))
        print(f"sampled N={N}: {sampled[N]}")
    if sampled:
        save(sampled)
        _plot_u(U_maps, U_gd, {N: s["T"] for N, s in sampled.items()})


def _u_agreement(dt, U_theory, U_gd) -> dict:
    """Sampled posterior mean of ``U_1`` against the theory's ``U*`` at the same width and T (raw units), and
    against the GD network's ``U_GD`` (each divided by its largest absolute entry: ``U_GD`` has no ``1/N_1``,
    gd.u_gd).  ``max_abs_z``: the largest |E[U] - U*| over the entries in units of that entry's MCSE."""
    import arviz as az

    U = dt["posterior"].ds["U"]
    mean = U.values.mean(axis=(0, 1))
    mcse = az.mcse(dt["posterior"].ds[["U"]])["U"].values
    iu = np.triu_indices(mean.shape[0])  # U is symmetric: each entry once
    d = (mean - U_theory)[iu]
    n_t, n_g = U_theory / np.max(np.abs(U_theory)), U_gd / np.max(np.abs(U_gd))
    return {
        "corr_theory": float(np.corrcoef(mean[iu], U_theory[iu])[0, 1]),
        "rel_frobenius_theory": float(np.linalg.norm(mean - U_theory) / np.linalg.norm(U_theory)),
        "max_abs_z_theory": float(np.max(np.abs(d) / mcse[iu])),
        "max_mcse": float(mcse.max()),
        "max_abs_U_theory": float(np.max(np.abs(U_theory))),
        "corr_gd": float(np.corrcoef((mean / np.max(np.abs(mean)))[iu], n_g[iu])[0, 1]),
        "corr_theory_gd": float(np.corrcoef(n_t[iu], n_g[iu])[0, 1]),
    }


def _plot_u(U_maps, U_gd, temps):
    """``digits_U_sampled_theory_gd.png``: per sampled width, the theory's ``U*``, the sampled ``E[U]``, their
    difference and the posterior s.d., all divided by that width's ``max |U*|``; and ``U_GD`` divided by its own
    largest entry.  One colour scale, [-1, 1], for every panel."""
    import matplotlib.pyplot as plt

    from _common import savefig

    rows = sorted(U_maps)
    fig, axes = plt.subplots(len(rows), 5, figsize=(13, 2.7 * len(rows)), squeeze=False)
    im = None
    for r, N in enumerate(rows):
        Ut, mean, sd = U_maps[N]
        scale = np.max(np.abs(Ut))
        panels = [
            (Ut, f"theory U* (N={N}, T={temps[N]})"),
            (mean, f"sampled E[U] (N={N})"),
            (mean - Ut, "sampled - theory"),
            (sd, "posterior s.d."),
        ]
        for c, (M, title) in enumerate(panels):
            im = axes[r, c].imshow(M / scale, cmap="RdBu_r", vmin=-1, vmax=1)
            axes[r, c].set_title(title + (f"\nrow divided by {scale:.3g}" if c == 0 else ""), fontsize=7)
        if r == 0:
            im = axes[r, 4].imshow(U_gd / np.max(np.abs(U_gd)), cmap="RdBu_r", vmin=-1, vmax=1)
            axes[r, 4].set_title("GD network U_GD / max|U_GD|", fontsize=7)
        else:
            axes[r, 4].axis("off")
    for ax in axes.ravel():
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8)
    fig.suptitle(
        "digits, 16 x 16 path matrix U_1 (4 x 4 heads); each row divided by its max |U*|, U_GD by its own max; "
        "one colour scale",
        fontsize=8,
    )
    savefig(fig, "digits_U_sampled_theory_gd.png")


def _gates(rep) -> dict:
    """The package's one verdict (``diagnostics.summarize``): R-hat and bulk/tail ESS of f, U and U_a, divergences,
    E-BFMI of the energy, with the thresholds it was judged by."""
    t = rep.thresholds
    return {
        "passed": rep.passed,
        "max_rhat": rep.max_rhat,
        "min_ess_bulk": rep.min_ess_bulk,
        "min_ess_tail": rep.min_ess_tail,
        "divergences": rep.divergences,
        "min_bfmi": None if rep.bfmi is None else float(min(rep.bfmi)),
        "failures": rep.failures,
        "thresholds": {
            "rhat_max": t.rhat_max,
            "ess_bulk_min": t.ess_bulk_min,
            "ess_tail_min": t.ess_tail_min,
            "max_divergences": t.max_divergences,
            "bfmi_min": t.bfmi_min,
        },
    }


if __name__ == "__main__":
    main()
