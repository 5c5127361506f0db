"""``bayes-attn potts sample|fit|replica``: Potts data, factored-attention fits, replica curves (docs/potts.md).

File contract:

* ``potts sample CONFIG.toml --out DATA.npz`` writes ``sequences`` (M, L) int in [0, C) (train),
  ``val_sequences``, ``test_sequences``, the truth ``J`` (L, L), ``U`` (C, C), ``beta``, ``h``
  (L, C) when fields are on, and ``info`` (JSON: generator, tuning and equilibration report).
* ``potts fit DATA.npz --model factored|softmax|plmdca|transformer --out FIT.npz`` reads
  ``sequences`` (and ``val_sequences`` / ``test_sequences`` when present) and never needs the
  truth; writes ``couplings`` (L, L, C, C) (attention, plmDCA), ``A`` (H, L, L), ``V`` (H, C, C)
  (attention), and ``FIT.json`` with the fit report and, when the truth is in DATA.npz, the test
  metrics (NLL gap to NLL*, eps_J, |corr|).
* ``potts replica --out CURVES.npz [--plot FIG.png]`` writes theory curves and simulations.

``[potts]`` table of CONFIG.toml (all optional)::

    generator = "G2"; L = 20; C = 20; seed = 0; field_sigma = 0.0
    beta = "tune"          # or a number
    target_D = 0.3; tol_D = 0.01
    M = 3000; n_val = 1000; n_test = 2000
    rungs = 16; beta_min = 0.8; beta_max = 4.0; systems = 200; burn_sweeps = 1000; thin = 10
    tune_systems = 100; tune_sweeps = 600
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np

from .._errors import InputError, nonnegative_int, one_of, positive, require

SAMPLE_KEYS = {"generator": "G2", "L": 20, "C": 20, "seed": 0, "field_sigma": 0.0, "beta": "tune", "target_D": 0.3,
               "tol_D": 0.01, "M": 3000, "n_val": 1000, "n_test": 2000, "rungs": 16, "beta_min": 0.8,
               "beta_max": 4.0, "systems": 200, "burn_sweeps": 1000, "thin": 10, "tune_systems": 100,
               "tune_sweeps": 600}
MODELS = ("factored", "softmax", "plmdca", "transformer")


def register(sub) -> None:
    p = sub.add_parser("potts", help="generalized Potts model and factored attention (docs/potts.md)")
    ps = p.add_subparsers(dest="potts_command", required=True, parser_class=type(p))
    s = ps.add_parser("sample", help="sample Potts sequences (PT, beta tuned to a Hamming distance)")
    s.add_argument("config", help="TOML file with a [potts] table")
    s.add_argument("--out", required=True, help="output DATA.npz")
    s.set_defaults(func=run_sample)
    f = ps.add_parser("fit", help="fit factored attention / plmDCA / a transformer to sequences")
    f.add_argument("data", help="DATA.npz with `sequences`")
    f.add_argument("--model", default="factored", choices=MODELS)
    f.add_argument("--out", required=True, help="output FIT.npz (metrics in FIT.json)")
    f.add_argument("--lam", type=float, action="append", help="L2 weight (repeat: chosen on validation)")
    f.add_argument("--heads", type=int, default=1)
    f.add_argument("--layers", type=int, default=2, help="transformer layers")
    f.add_argument("--d-model", type=int, default=32)
    f.add_argument("--steps", type=int, default=3000, help="transformer steps")
    f.add_argument("--max-iter", type=int, default=3000, help="L-BFGS iterations")
    f.add_argument("--seed", type=int, default=0)
    f.set_defaults(func=run_fit)
    r = ps.add_parser("replica", help="ridge/replica theory curves and simulations (potts.md §9.2)")
    r.add_argument("--out", required=True, help="output CURVES.npz")
    r.add_argument("--plot", help="PNG figure")
    r.add_argument("--L", type=int, default=200)
    r.add_argument("--nu", type=float, default=3.0)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--lam", type=float, action="append", help="ridge lambdas (default 1e-4 1e-2 1e-1 + optimal)")
    r.add_argument("--alphas", type=float, nargs="+", default=[0.25, 0.5, 0.75, 0.95, 1.05, 1.5, 2.0, 3.0, 4.0])
    r.add_argument("--sites", type=int, default=10)
    r.add_argument("--reps", type=int, default=4)
    r.set_defaults(func=run_replica)


# ---------------------------------------------------------------------------- sample
def _sample_config(path) -> dict:
    path = Path(path)
    require(path.is_file(), "config", f"file not found: {path}")
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"config: invalid TOML ({exc})") from None
    table = raw.get("potts", {})
    require(isinstance(table, dict), "potts", "must be a table")
    extra = sorted(set(table) - set(SAMPLE_KEYS))
    require(not extra, f"potts.{extra[0]}" if extra else "potts", "unknown key")
    cfg = {**SAMPLE_KEYS, **table}
    one_of(cfg["generator"], ("G1", "G2", "G3", "G4"), "potts.generator")
    for k in ("L", "C", "M", "n_val", "n_test", "rungs", "systems", "burn_sweeps", "thin", "tune_systems",
              "tune_sweeps"):
        positive(cfg[k], f"potts.{k}", integer=True)
    nonnegative_int(cfg["seed"], "potts.seed")
    for k in ("target_D", "tol_D", "beta_min", "beta_max"):
        positive(cfg[k], f"potts.{k}")
    require(cfg["field_sigma"] >= 0, "potts.field_sigma", f"must be >= 0, got {cfg['field_sigma']}")
    if cfg["beta"] != "tune":
        positive(cfg["beta"], "potts.beta")
    return cfg


def run_sample(args) -> int:
    import jax

    from .. import potts as pt

    cfg = _sample_config(args.config)
    L, C = cfg["L"], cfg["C"]
    J, U = pt.generate_couplings(cfg["generator"], L, C, cfg["seed"])
    h = (cfg["field_sigma"] * np.random.default_rng(cfg["seed"] + 1).standard_normal((L, C))
         if cfg["field_sigma"] > 0 else None)
    key = jax.random.PRNGKey(cfg["seed"])
    k1, k2 = jax.random.split(key)
    info = {"config": cfg, "convention": "H = -sum_{i<j} J_ij U_{s_i s_j} - sum_i h_i(s_i)"}
    beta = cfg["beta"]
    if beta == "tune":
        tr = pt.tune_beta(k1, J, U, h, target=cfg["target_D"], tol=cfg["tol_D"], beta_min=cfg["beta_min"],
                          beta_max=cfg["beta_max"], rungs=cfg["rungs"], systems=cfg["tune_systems"],
                          sweeps=cfg["tune_sweeps"], thin=cfg["thin"],
                          progress=lambda b, D: print(f"tune: beta={b:.4f} D={D:.4f}", flush=True))
        beta = tr.beta
        info["tuning"] = {"beta": tr.beta, "D": tr.D, "grid_betas": tr.grid_betas.tolist(),
                          "grid_D": tr.grid_D.tolist(), "history": tr.history, "monotone": tr.monotone}
        if abs(tr.D - cfg["target_D"]) > cfg["tol_D"]:
            print(f"warning: bisection stopped at D={tr.D:.4f}, outside target {cfg['target_D']} +- {cfg['tol_D']}")
    n = cfg["M"] + cfg["n_val"] + cfg["n_test"]
    beta_min = min(cfg["beta_min"], 0.5 * beta)
    s, rep = pt.equilibrium_samples(k2, J, U, h, float(beta), n, beta_min=beta_min, rungs=cfg["rungs"],
                                    systems=min(cfg["systems"], n), burn_sweeps=cfg["burn_sweeps"], thin=cfg["thin"])
    info["equilibration"] = rep.summary()
    print(f"beta={beta:.4f} D={rep.D:.4f} energy/site={rep.energy_per_site:.4f} "
          f"equilibration {'PASS' if rep.passed else 'FAIL: ' + '; '.join(rep.failures)}")
    M, nv = cfg["M"], cfg["n_val"]
    out = {"sequences": s[:M], "val_sequences": s[M:M + nv], "test_sequences": s[M + nv:], "J": J, "U": U,
           "beta": np.float64(beta), "info": json.dumps(info, default=float)}
    if h is not None:
        out["h"] = h
    np.savez(args.out, **out)
    return 0


# ---------------------------------------------------------------------------- fit
def _load_data(path):
    path = Path(path)
    require(path.is_file(), "data", f"file not found: {path}")
    try:
        d = np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is bad input
        raise InputError(f"data: cannot read {path} as .npz ({type(exc).__name__})") from None
    require("sequences" in d.files, "data", f"{path.name} has no `sequences` array")
    return {k: d[k] for k in d.files}


def run_fit(args) -> int:
    import jax

    from .. import potts as pt

    d = _load_data(args.data)
    s = pt.check_sequences(d["sequences"])
    L = s.shape[1]
    C = int(s.max()) + 1 if "U" not in d else None
    # the number of colours is a property of the data alphabet; the truth is never needed to fit
    C = max(C or 0, int(s.max()) + 1, *(int(d[k].max()) + 1 for k in ("val_sequences", "test_sequences") if k in d))
    val = pt.check_sequences(d["val_sequences"], C, L, "val_sequences") if "val_sequences" in d else None
    test = pt.check_sequences(d["test_sequences"], C, L, "test_sequences") if "test_sequences" in d else None
    if val is None:
        n = max(len(s) // 10, 1)
        s, val = s[:-n], s[-n:]
    positive(args.heads, "heads", integer=True)
    lams = args.lam or ([5e-4] if args.model == "plmdca" else [1e-4])
    for lam in lams:
        require(lam >= 0, "lam", f"must be >= 0, got {lam}")
    key = jax.random.PRNGKey(args.seed)
    report, out = {"model": args.model, "L": L, "C": C, "M": len(s)}, {}
    if args.model == "transformer":
        cfg = pt.TransformerConfig(L, C, d_model=args.d_model, layers=args.layers, steps=args.steps,
                                   heads=max(args.heads, 1))
        params, hist = pt.fit_transformer(key, s, val, cfg)
        report["history"] = hist
        nll_of = lambda x: pt.transformer_pl_loss(params, x, cfg.heads)  # noqa: E731
    else:
        fits = []
        for lam in lams:
            if args.model == "plmdca":
                params, info = pt.fit_plmdca(s, C, lam, max_iter=args.max_iter)
                lg = lambda p, x: pt.plm_logits(p, x)  # noqa: E731
            else:
                fc = pt.FAConfig(L, C, kind="free" if args.model == "factored" else "softmax", heads=args.heads)
                params, info = pt.fit_lbfgs(key, s, fc, lam, max_iter=args.max_iter)
                lg = pt.fa_logits
            v = float(pt.pseudo_nll(lg(params, val), val))
            fits.append((v, lam, params, info))
            print(f"lam={lam:g}: val PL {v:.5f}  grad-norm {info.grad_norm:.2e}  "
                  f"{'converged' if info.converged else 'NOT CONVERGED'} in {info.iterations} iterations")
        v, lam, params, info = min(fits, key=lambda t: t[0])
        report.update(lam=lam, val_nll=v, fit=info._asdict(), scan=[(t[1], t[0]) for t in fits])
        if args.model == "plmdca":
            out["couplings"] = pt.plm_couplings(params)
            out["h"] = np.asarray(params["h"])
        else:
            out["couplings"] = np.asarray(pt.fa_couplings(params))
            out["A"] = np.asarray(pt.fa_attention(params))
            out["V"] = np.asarray(params["V"])
        nll_of = lambda x: float(pt.pseudo_nll(lg(params, x), x))  # noqa: E731
    if test is not None:
        report["test_nll"] = float(nll_of(test))
        if all(k in d for k in ("J", "U", "beta")):
            model = pt.Potts(d["J"], d["U"], float(d["beta"]), d.get("h"))
            report["nll_star"] = pt.nll_star(model, test)
            report["nll_gap"] = report["test_nll"] - report["nll_star"]
            if "couplings" in out:
                report["eps_J"] = pt.coupling_error(out["couplings"], model.beta, model.J, model.U)
                Jh, Uh, _ = pt.kronecker_rank1(out["couplings"])
                report["corr_Jhat_J_rank1"] = pt.abs_corr(pt.offdiag(Jh), pt.offdiag(model.J))
            if "A" in out and out["A"].shape[0] == 1:
                A = out["A"][0]
                report.update(pt.factor_recovery(0.5 * (A + A.T), out["V"][0], model.J, model.U))
    np.savez(args.out, **out)
    Path(args.out).with_suffix(".json").write_text(json.dumps(report, indent=1, default=float))
    print(json.dumps({k: v for k, v in report.items() if k not in ("history", "scan", "fit")}, default=float))
    return 0


# ---------------------------------------------------------------------------- replica
def run_replica(args) -> int:
    from .. import potts as pt

    positive(args.L, "L", integer=True)
    require(args.sites <= args.L, "sites", f"must be <= L={args.L}")
    for a in args.alphas:
        positive(a, "alphas")
    teacher = pt.gaussian_teacher(args.L, args.nu, args.seed)
    curves = pt.replica_curves(teacher, args.alphas, args.lam, sites=args.sites, reps=args.reps, seed=args.seed + 1)
    np.savez(args.out, **curves)
    if args.plot:
        pt.plot_replica(curves, args.plot)
    return 0
