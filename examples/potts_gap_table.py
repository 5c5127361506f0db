"""Headline table and figure: test NLL gap to NLL* at L = C = 20, D = 0.3 (docs/potts.md §6-8).

Fits on DATA.npz (from `bayes-attn potts sample examples/potts_g2.toml --out DATA.npz`):
FA-free (L-BFGS, lambda 1e-4; at M < 3000 chosen on validation among {1e-4, 1e-3}), vanilla transformers of
1-4 layers, plmDCA (L-BFGS, lambda 5e-4 = PlmDCA.jl default 0.01 in M*L units), FA-free at
M in {300, 1000} (gap vs M), then a lambda scan and FA-softmax (1 and 4 heads).  Writes RESULTS.json and gap figures.

    python examples/potts_gap_table.py DATA.npz OUTDIR [--quick]
    python examples/potts_gap_table.py --smoke    # tiny data (L=5, C=3) made here, 1-layer transformer, for tests
"""

import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

import bayes_attn  # noqa: F401
from bayes_attn import potts as pt


SMOKE_CONFIG = """[potts]
generator = "G2"
L = 5
C = 3
seed = 0
beta = 1.0
M = 200
n_val = 50
n_test = 50
rungs = 4
systems = 50
burn_sweeps = 50
thin = 2
"""


def make_smoke_data(path="smoke.npz") -> str:
    """Tiny data set (SMOKE_CONFIG) written by ``bayes-attn potts sample``, for the examples' smoke tests."""
    from bayes_attn.cli import main as cli

    Path("smoke.toml").write_text(SMOKE_CONFIG)
    assert cli(["potts", "sample", "smoke.toml", "--out", path]) == 0
    return path


def main(data, outdir, quick=False, smoke=False):
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    d = np.load(data)
    tr, va, te = d["sequences"], d["val_sequences"], d["test_sequences"]
    model = pt.Potts(d["J"], d["U"], float(d["beta"]))
    L, C = model.L, model.C
    res = {"beta": model.beta, "D_train": pt.hamming_distance(tr, C), "nll_star": pt.nll_star(model, te),
           "nll_star_val": pt.nll_star(model, va), "uniform": float(np.log(C)), "rows": []}
    path = outdir / "potts_results.json"
    t0 = time.time()

    def save(row):
        row["seconds"] = round(time.time() - t0, 1)
        res["rows"].append(row)
        path.write_text(json.dumps(res, indent=1, default=float))
        print(json.dumps(row, default=float), flush=True)

    def fa_row(name, M, kind, heads, lams):
        best = None
        for lam in lams:
            cfg = pt.FAConfig(L, C, kind=kind, heads=heads)
            p, info = pt.fit_lbfgs(jax.random.PRNGKey(0), tr[:M], cfg, lam, max_iter=1000, tol=1e-5)
            v = float(pt.pl_loss(p, va))
            print(f"  {name} M={M} lam={lam:g} val={v:.5f} {info}", flush=True)
            if best is None or v < best[0]:
                best = (v, lam, p, info)
        v, lam, p, info = best
        K = np.asarray(pt.fa_couplings(p))
        row = {"model": name, "M": M, "lam": lam, "params": int(sum(x.size for x in jax.tree.leaves(p))),
               "test_nll": float(pt.pl_loss(p, te)), "val_nll": v, "eps_J": pt.coupling_error(K, model.beta,
               model.J, model.U), "grad_norm": info.grad_norm, "iterations": info.iterations,
               "converged": info.converged}
        row["gap"] = row["test_nll"] - res["nll_star"]
        if heads == 1:
            A = np.asarray(pt.fa_attention(p))[0]
            row.update(pt.factor_recovery(0.5 * (A + A.T), np.asarray(p["V"])[0], model.J, model.U))
        save(row)

    # order: the headline comparison first (rows are saved as they finish)
    fa_row("FA-free", 3000, "free", 1, [1e-4])
    for layers in (1,) if smoke else (1, 2, 3, 4):
        steps = 40 if smoke else 800 if quick else 2000
        cfg = pt.TransformerConfig(L, C, d_model=32, layers=layers, heads=4, steps=steps,
                                   eval_every=20 if smoke else 200, patience=3, weight_decay=1e-4)
        p, hist = pt.fit_transformer(jax.random.PRNGKey(layers), tr, va, cfg, progress=True)
        row = {"model": f"transformer {layers} layer(s)", "M": 3000, "d_model": 32, "heads": 4,
               "params": int(sum(x.size for x in jax.tree.leaves(p))), "steps": hist[-1][0],
               "test_nll": pt.transformer_pl_loss(p, te, cfg.heads), "val_nll": min(h[2] for h in hist)}
        row["gap"] = row["test_nll"] - res["nll_star"]
        save(row)
    for lam in [5e-4]:
        p, info = pt.fit_plmdca(tr, C, lam, max_iter=300 if quick else 1000, tol=1e-5)
        K = pt.plm_couplings(p)
        Jh, Uh, _ = pt.kronecker_rank1(K)
        row = {"model": "plmDCA", "M": 3000, "lam": lam, "params": L * (L - 1) * C * C + L * C,
               "test_nll": float(pt.pseudo_nll(pt.plm_logits(p, te), te)),
               "train_nll": float(pt.pseudo_nll(pt.plm_logits(p, tr), tr)),
               "eps_J": pt.coupling_error(K, model.beta, model.J, model.U),
               "corr_Jhat_J_rank1": pt.abs_corr(pt.offdiag(Jh), pt.offdiag(model.J)),
               "grad_norm": info.grad_norm, "iterations": info.iterations, "converged": info.converged}
        row["gap"] = row["test_nll"] - res["nll_star"]
        save(row)
    for M in (300, 1000):
        fa_row("FA-free", M, "free", 1, [1e-4] if quick else [1e-4, 1e-3])
    if not quick:
        fa_row("FA-free (lambda scan)", 3000, "free", 1, [1e-5, 1e-3])
        fa_row("FA-softmax H=1", 3000, "softmax", 1, [1e-4])
        fa_row("FA-softmax H=4", 3000, "softmax", 4, [1e-4])
    plot(res, outdir)


def plot(res, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = res["rows"]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    fa = sorted([r for r in rows if r["model"] == "FA-free"], key=lambda r: r["M"])
    fa = list({r["M"]: r for r in fa}.values())
    ax[0].loglog([r["M"] for r in fa], [r["gap"] for r in fa], "o-", label="FA-free (best lambda)")
    ax[0].set_xlabel("M (training sequences)")
    ax[0].set_ylabel("test NLL gap to NLL* (nats)")
    ax[0].legend()
    ax[0].set_title("factored attention: gap vs M")
    names = [r["model"] + ("" if "lam" not in r or r["model"].startswith("FA") else f" lam={r['lam']:g}")
             for r in rows if r["M"] == 3000]
    gaps = [r["gap"] for r in rows if r["M"] == 3000]
    ax[1].barh(range(len(gaps)), gaps)
    ax[1].set_yticks(range(len(gaps)), names, fontsize=8)
    ax[1].set_xscale("log")
    ax[1].set_xlabel("test NLL gap at M = 3000 (nats, log scale)")
    ax[1].set_title(f"L = C = 20, beta = {res['beta']:.3f}, D = 0.3")
    fig.tight_layout()
    fig.savefig(outdir / "potts_gap.png", dpi=120)


if __name__ == "__main__":
    if "--smoke" in sys.argv:
        main(make_smoke_data(), "gap_smoke", quick=True, smoke=True)
    else:
        main(sys.argv[1], sys.argv[2], quick="--quick" in sys.argv)
