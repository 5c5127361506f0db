"""Coupling recovery vs M on two ensembles at two Hamming distances, FA vs plmDCA
(docs/potts.md §5-6).  End to end: data (beta tuned, PT samples), fits, law fits, figure, JSON.

Ensembles (project choice, docs/potts_choices.md): ``G2`` (potts.md §1.2, no fields) and
``G2+fields`` (the same couplings plus a consensus colour per site, h_i(c_i) = 1, and N(0, 0.5^2)
noise on every h_i(a)).  For each ensemble and target D in {0.3, 0.7}: beta is bisected once
(couplings seed 0, |D - target| <= 0.02); each data seed is an independent PT sample of
max(M) + 1000 + 2000 sequences (train prefix, validation, test).  Fits at every M: FA-free, one
head, per-site bias when the data have fields, lambda chosen on validation PL; plmDCA with its
default lambda.  Metrics: ``fa_metrics`` (zero-sum gauge).  Law: corr^2 = 1 / (1 + k / M),
k per data seed by least squares, reported as mean +- s.e. over seeds, per ensemble and D.

    python examples/potts_recovery_vs_M.py OUTDIR [--cache DIR] [--stage data|fit|all] [--seeds 0 1 2]
    python examples/potts_recovery_vs_M.py OUTDIR --merge A/potts_recovery.json B/potts_recovery.json
        # several fit processes (each with its own OUTDIR, e.g. one per core and D target) -> one JSON
    python examples/potts_recovery_vs_M.py --smoke     # tiny (L = 5, C = 3), for the tests
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np
from tqdm import tqdm

import bayes_attn  # noqa: F401
from bayes_attn import potts as pt

ENSEMBLES = {"G2": {"generator": "G2"}, "G2+fields": {"generator": "G2", "consensus": 1.0, "field_sigma": 0.5}}
FULL = {
    "L": 20,
    "C": 20,
    "Ms": [1000, 3000, 10000, 30000],
    "seeds": [0, 1, 2],
    "sample": {
        "rungs": 10,
        "beta_min": 0.8,
        "beta_max": 5.0,
        "tol_D": 0.02,
        "systems": 1100,
        "burn_sweeps": 500,
        "thin": 10,
        "tune_systems": 100,
        "tune_sweeps": 400,
        "n_val": 1000,
        "n_test": 2000,
        "check_other": False,
    },
    "lams": list(pt.LAM_GRID),
    "lam_fields": pt.LAM_FIELDS,
    "plm_lam": pt.PLM_LAM,
    "targets": [0.3, 0.7],
}
SMOKE = {
    "L": 5,
    "C": 3,
    "Ms": [100, 300],
    "seeds": [0],
    "sample": {
        "rungs": 4,
        "beta_min": 0.3,
        "beta_max": 6.0,
        "tol_D": 0.05,
        "systems": 100,
        "burn_sweeps": 40,
        "thin": 2,
        "tune_systems": 50,
        "tune_sweeps": 40,
        "n_val": 100,
        "n_test": 100,
        "check_other": False,
    },
    "lams": [1e-3, 1e-4],
    "lam_fields": pt.LAM_FIELDS,
    "plm_lam": pt.PLM_LAM,
    "targets": [0.5],
}


def config(setup, ens, D, seed, beta="tune"):
    return pt.SampleConfig(
        **ENSEMBLES[ens],
        L=setup["L"],
        C=setup["C"],
        seed=0,
        data_seed=seed,
        target_D=D,
        beta=beta,
        M=max(setup["Ms"]),
        **setup["sample"],
    )


def data_stage(setup, cache: Path):
    """Tune beta once per (ensemble, D) and write one DATA.npz per data seed into ``cache``."""
    cache.mkdir(parents=True, exist_ok=True)
    jobs = [(e, D) for e in ENSEMBLES for D in setup["targets"]]
    for ens, D in tqdm(jobs, desc="data", file=sys.stdout):
        tag = f"{ens}_D{D}"
        tpath = cache / f"tune_{tag}.json"
        if not tpath.exists():
            t0 = time.time()
            tr = pt.tune(config(setup, ens, D, 0))
            pt.atomic_write_json(
                tpath,
                {
                    "beta": tr.beta,
                    "D": tr.D,
                    "history": tr.history,
                    "monotone": tr.monotone,
                    "grid_betas": tr.grid_betas,
                    "grid_D": tr.grid_D,
                    "seconds": time.time() - t0,
                },
            )
        beta = json.loads(tpath.read_text())["beta"]
        for seed in setup["seeds"]:
            path = cache / f"data_{tag}_s{seed}.npz"
            if path.exists():
                continue
            t0 = time.time()
            d = pt.make_dataset(config(setup, ens, D, seed, beta=beta))
            info = json.loads(d["info"])
            info["seconds"] = time.time() - t0
            d["info"] = json.dumps(info, default=float)
            pt.atomic_savez(path, **d)
            eq = info["equilibration"]
            print(
                f"{path.name}: beta {beta:.4f} D {eq['D']:.3f} R-hat(E) {eq['rhat_energy']:.4f} "
                f"{'PASS' if eq['passed'] else 'FAIL ' + '; '.join(eq['failures'])} ({info['seconds']:.0f} s)",
                flush=True,
            )


def _cells(setup):
    return [
        (M, e, D, s)
        for M in setup.get("fit_Ms", setup["Ms"])
        for e in setup.get("fit_ensembles", ENSEMBLES)
        for D in setup.get("fit_targets", setup["targets"])
        for s in setup.get("fit_seeds", setup["seeds"])
    ]


def fit_stage(setup, cache: Path, out: Path, smoke=False):
    """FA and plmDCA at every (M, ensemble, D, seed), smallest M first; rows saved as they finish
    (a rerun skips the cells already in the JSON), then the law fits and the figure."""
    path = out / "potts_recovery.json"
    res = json.loads(path.read_text()) if path.exists() and not smoke else {"rows": []}
    res.update(
        setup={k: v for k, v in setup.items() if not k.startswith("fit_")},
        ensembles=ENSEMBLES,
        law="corr_K^2 = 1 / (1 + k / M), k per data seed by least squares through the origin on "
        "1/corr^2 - 1 vs 1/M; mean +- s.e. over seeds",
    )
    res["datasets"] = datasets(setup, cache)
    done = {(r["model"], r["M"], r["ensemble"], r["D_target"], r["seed"]) for r in res["rows"]}
    warm = {}
    t0 = time.time()
    for M, ens, D, seed in tqdm(_cells(setup), desc="fits", file=sys.stdout):
        tag = f"{ens}_D{D}"
        if ("FA", M, ens, D, seed) in done and ("plmDCA", M, ens, D, seed) in done:
            continue
        d = np.load(cache / f"data_{tag}_s{seed}.npz")
        model = pt.Potts(d["J"], d["U"], float(d["beta"]), d["h"] if "h" in d.files else None)
        data = {"val": d["val_sequences"], "test": d["test_sequences"]}
        tr = d["sequences"][:M]
        base = {
            "M": M,
            "ensemble": ens,
            "D_target": D,
            "seed": seed,
            "beta": model.beta,
            "D_train": pt.hamming_distance(tr, model.C),
        }
        if ("FA", M, ens, D, seed) not in done:
            t1 = time.time()
            fit = pt.fit_scan(
                jax.random.PRNGKey(seed),
                tr,
                data["val"],
                model.C,
                pt.FitSettings(
                    lams=setup["lams"],
                    fields=(model.h is not None,),
                    stop_when_worse=True,
                    lam_fields=setup["lam_fields"],
                ),
                init=warm.get((ens, D, seed)),
            )
            p, best, scan = fit.params, fit.best, fit.entries
            warm[(ens, D, seed)] = p
            row = {
                "model": "FA",
                **base,
                "fields": fit.config.bias,
                "lam": best["lam"],
                "lam_fields": setup["lam_fields"] if fit.config.bias else None,
                "fit": best["fit"],
                "scan": [{k: e[k] for k in ("lam", "val_nll")} | {"reason": e["fit"]["reason"]} for e in scan],
                **pt.fa_metrics(p, model, data),
                "seconds": time.time() - t1,
            }
            res["rows"].append(row)
            pt.atomic_write_json(path, res)
            print(
                f"FA  M={M} {tag} s{seed}: corr_K {row['corr_K']:.3f} eps_J {row['eps_J']:.3f} "
                f"lam {row['lam']:g} {row['fit']['reason']} ({row['seconds']:.0f} s)",
                flush=True,
            )
        if ("plmDCA", M, ens, D, seed) not in done:
            t1 = time.time()
            p, info = pt.fit_plmdca(tr, model.C, setup["plm_lam"])
            row = {
                "model": "plmDCA",
                **base,
                "fields": True,
                "lam": setup["plm_lam"],
                "fit": info._asdict(),
                **pt.fa_metrics(p, model, data),
                "seconds": time.time() - t1,
            }
            res["rows"].append(row)
            pt.atomic_write_json(path, res)
            print(
                f"plm M={M} {tag} s{seed}: corr_K {row['corr_K']:.3f} eps_J {row['eps_J']:.3f} "
                f"{row['fit']['reason']} ({row['seconds']:.0f} s)",
                flush=True,
            )
    res["laws"] = laws(res["rows"])
    res["seconds_this_run"] = time.time() - t0
    pt.atomic_write_json(path, res)
    plot(res, out / "potts_recovery.png")


def merge(out: Path, parts, cache: Path | None = None):
    """Union of the rows of several ``potts_recovery.json`` files (fit processes run side by side, each
    into its own folder) into ``out``: one row per (model, M, ensemble, D, seed), the first file's
    row winning a tie; then the law fits and the figure, as at the end of a fit stage.  Settings that
    differ between the parts (lambda grid, plmDCA lambda, sampling) are refused: rows made under
    different settings do not belong in one table."""
    parts = [json.loads(Path(q).read_text()) for q in parts]
    res = dict(parts[0])
    for q in parts[1:]:
        if q["setup"] != res["setup"] or q["ensembles"] != res["ensembles"]:
            raise SystemExit("merge: the parts were fitted with different settings (setup or ensembles differ)")
    rows, seen = [], set()
    for q in parts:
        for r in q["rows"]:
            key = (r["model"], r["M"], r["ensemble"], r["D_target"], r["seed"])
            if key not in seen:
                seen.add(key)
                rows.append(r)
    res["rows"] = sorted(
        rows, key=lambda r: (r["M"], list(ENSEMBLES).index(r["ensemble"]), r["D_target"], r["seed"], r["model"] != "FA")
    )
    if cache is not None and cache.exists():
        res["datasets"] = datasets(res["setup"], cache)
    res["laws"] = laws(res["rows"])
    res["merged_from"] = len(parts)
    out.mkdir(parents=True, exist_ok=True)
    pt.atomic_write_json(out / "potts_recovery.json", res)
    plot(res, out / "potts_recovery.png")


def datasets(setup, cache: Path):
    """Tuning and equilibration summary of every data set (from its ``info``)."""
    out = []
    for ens in ENSEMBLES:
        for D in setup["targets"]:
            tun = json.loads((cache / f"tune_{ens}_D{D}.json").read_text())
            for seed in setup["seeds"]:
                p = cache / f"data_{ens}_D{D}_s{seed}.npz"
                if not p.exists():
                    continue
                info = json.loads(str(np.load(p)["info"]))
                eq = info["equilibration"]
                out.append(
                    {
                        "ensemble": ens,
                        "D_target": D,
                        "seed": seed,
                        "beta": tun["beta"],
                        "D_tune": tun["D"],
                        "tune_steps": len(tun["history"]),
                        "D_sample": eq["D"],
                        "D_se": eq["D_se"],
                        "energy_per_site": eq["energy_per_site"],
                        "rhat_energy": eq["rhat_energy"],
                        "swap_acc_min": eq["swap_acc_min"],
                        "round_trips_mean": eq["round_trips_mean"],
                        "passed": eq["passed"],
                        "failures": eq["failures"],
                        "sample_seconds": info.get("seconds"),
                    }
                )
    return out


def law_k(Ms, corrs):
    """Least-squares k of 1/corr^2 - 1 = k / M (through the origin) and its standard error."""
    x, y = 1.0 / np.asarray(Ms, float), 1.0 / np.asarray(corrs, float) ** 2 - 1.0
    k = float(x @ y / (x @ x))
    se = float(np.sqrt(np.sum((y - k * x) ** 2) / max(len(x) - 1, 1) / (x @ x))) if len(x) > 1 else float("nan")
    return k, se


def laws(rows):
    """k per (model, ensemble, D): per-seed least squares, mean +- s.e. over seeds, and the pooled fit."""
    out = []
    keys = sorted({(r["model"], r["ensemble"], r["D_target"]) for r in rows})
    for mdl, ens, D in keys:
        sel = [r for r in rows if (r["model"], r["ensemble"], r["D_target"]) == (mdl, ens, D)]
        seeds = sorted({r["seed"] for r in sel})
        ks = []
        for s in seeds:
            rs = [r for r in sel if r["seed"] == s]
            if len(rs) >= 2:
                ks.append(law_k([r["M"] for r in rs], [r["corr_K"] for r in rs])[0])
        kp, kp_se = law_k([r["M"] for r in sel], [r["corr_K"] for r in sel])
        Ms = sorted({r["M"] for r in sel})
        k_mean = float(np.mean(ks)) if ks else None
        # a test of the 1/M form: k fitted on the small-M half and on the large-M half of the grid (equal if the
        # law holds), and the largest gap between the law (k mean) and the seed-mean corr at any M
        half = Ms[: len(Ms) // 2], Ms[len(Ms) // 2 :]
        k_half = [
            law_k([r["M"] for r in sel if r["M"] in h], [r["corr_K"] for r in sel if r["M"] in h])[0]
            if len(Ms) >= 2
            else None
            for h in half
        ]
        dev = (
            max(
                abs(float(np.mean([r["corr_K"] for r in sel if r["M"] == M])) - 1 / np.sqrt(1 + k_mean / M)) for M in Ms
            )
            if k_mean
            else None
        )
        out.append(
            {
                "model": mdl,
                "ensemble": ens,
                "D_target": D,
                "Ms": Ms,
                "k_per_seed": ks,
                "k_mean": k_mean,
                "k_se": float(np.std(ks, ddof=1) / np.sqrt(len(ks))) if len(ks) > 1 else None,
                "k_pooled": kp,
                "k_pooled_se": kp_se,
                "n_cells": len(sel),
                "k_small_M": k_half[0],
                "k_large_M": k_half[1],
                "small_Ms": half[0],
                "large_Ms": half[1],
                "max_abs_dev_corr": dev,
            }
        )
    return out


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = res["rows"]
    ens = list(ENSEMBLES)
    Ds = res["setup"]["targets"]
    fig, axes = plt.subplots(len(ens), len(Ds), figsize=(4.2 * len(Ds), 3.3 * len(ens)), squeeze=False)
    for a, e in enumerate(ens):
        for b, D in enumerate(Ds):
            ax = axes[a, b]
            for mdl, mk in (("FA", "o-"), ("plmDCA", "s--")):
                sel = [r for r in rows if r["model"] == mdl and r["ensemble"] == e and r["D_target"] == D]
                Ms = sorted({r["M"] for r in sel})
                if not Ms:
                    continue
                c = [[r["corr_K"] for r in sel if r["M"] == M] for M in Ms]
                mu = [np.mean(x) for x in c]
                se = [np.std(x, ddof=1) / np.sqrt(len(x)) if len(x) > 1 else 0.0 for x in c]
                ax.errorbar(Ms, mu, yerr=se, fmt=mk, ms=4, capsize=3, label=f"{mdl} (mean +- s.e., {len(c[0])} seeds)")
                law = [x for x in res.get("laws", []) if (x["model"], x["ensemble"], x["D_target"]) == (mdl, e, D)]
                if law and law[0]["k_mean"]:
                    g = np.geomspace(min(Ms) / 1.5, max(Ms) * 1.5, 100)
                    ax.plot(g, 1 / np.sqrt(1 + law[0]["k_mean"] / g), lw=0.8, color=ax.lines[-1].get_color(), alpha=0.6)
            ax.set_xscale("log")
            ax.set_ylim(0, 1.02)
            ax.set_title(f"{e}, D = {D}", fontsize=9)
            ax.set_xlabel("M")
            ax.set_ylabel("corr(gauged K, truth)")
            ax.legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    pt.atomic_write_bytes(path, _png(fig))
    print(f"wrote {path}")


def _png(fig) -> bytes:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return buf.getvalue()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--cache", help="folder for the data sets (default OUTDIR/potts_recovery_data)")
    ap.add_argument("--stage", choices=("data", "fit", "all"), default="all")
    ap.add_argument("--seeds", type=int, nargs="+")
    ap.add_argument("--Ms", type=int, nargs="+", help="fit only these M (the data are drawn for the full grid)")
    ap.add_argument("--targets", type=float, nargs="+", help="fit only these D targets (cells already fitted are kept)")
    ap.add_argument("--ensembles", nargs="+", choices=list(ENSEMBLES), help="fit only these ensembles")
    ap.add_argument(
        "--merge",
        nargs="+",
        metavar="JSON",
        help="merge the rows of these potts_recovery.json files into OUTDIR (no fitting)",
    )
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    setup = dict(SMOKE if args.smoke else FULL)
    if args.seeds:  # fit stage alone: a filter on the cells (the stored setup keeps every seed, so parts merge)
        setup["fit_seeds" if args.stage == "fit" else "seeds"] = args.seeds
    if args.smoke and args.outdir is None:
        args.outdir = "recovery_smoke"
    if args.outdir is None:
        ap.error("OUTDIR is required (or --smoke)")
    out = Path(args.outdir)
    cache = Path(args.cache) if args.cache else out / "potts_recovery_data"
    if args.merge:
        merge(out, args.merge, cache if args.cache else None)
        return
    if args.stage in ("data", "all"):
        data_stage(setup, cache)
    if args.stage in ("fit", "all"):
        if args.Ms:
            setup["fit_Ms"] = args.Ms
        if args.targets:
            setup["fit_targets"] = args.targets
        if args.ensembles:
            setup["fit_ensembles"] = args.ensembles
        fit_stage(setup, cache, out, smoke=args.smoke)


if __name__ == "__main__":
    main()
