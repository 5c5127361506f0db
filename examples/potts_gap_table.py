"""Headline comparison at M = 3000 on G2 data at D ~ 0.3 (docs/potts.md §6-8).

Data: a DATA.npz with train/val/test splits and the truth (default: the recovery example's
G2, D ~ 0.3, data seed 0; its first 3000 training sequences).  Rows: FA-free (1 head, lambda
chosen on validation over ``LAM_GRID``), FA-softmax (1 and 4 heads, lambda 1e-4), plmDCA
(lambda 5e-4), vanilla transformers of 1-4 layers with ``--seeds`` seeds each (AdamW, warm-up
then cosine decay to the ``--steps`` budget, early stopping on the exact validation PL: an
evaluation every ``--eval-every`` steps, stop after ``--patience`` evaluations without an
improvement of 1e-4 nats, best parameters kept; whether it triggered is recorded).  The default
budget (12 000 steps, about 26 passes over the 60 000 masked positions of M = 3000) is meant to lie far
beyond the step at which the validation PL turns up, so that early stopping, not the budget, ends the
runs; each row records ``steps_run``, ``best_step`` and ``early_stopped`` to show whether it did.  Metrics: ``fa_metrics``.  Writes
OUTDIR/potts_gap.json and OUTDIR/potts_gap.png (linear axis, error bars = s.e. over seeds).

    python examples/potts_gap_table.py DATA.npz OUTDIR [--seeds 3] [--steps 12000] [--layers 1 2 3 4] [--resume]
    python examples/potts_gap_table.py DATA.npz OUTDIR --merge A/potts_gap.json B/potts_gap.json
        # --resume keeps the rows already in OUTDIR/potts_gap.json and runs only the missing ones, so two
        # processes (e.g. --layers 1 2 and --layers 3 4, each with its own OUTDIR) can share the work
    python examples/potts_gap_table.py --smoke    # tiny data (L=5, C=3) made here, for tests
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np
from tqdm import tqdm

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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?")
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--M", type=int, default=3000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=12000, help="transformer step budget (cosine decay to it)")
    ap.add_argument("--eval-every", type=int, default=250, help="transformer steps between validation checks")
    ap.add_argument("--patience", type=int, default=4, help="checks without improvement before stopping")
    ap.add_argument("--layers", type=int, nargs="+", default=[1, 2, 3, 4], help="transformer depths to run")
    ap.add_argument("--resume", action="store_true", help="keep the rows already in OUTDIR/potts_gap.json")
    ap.add_argument("--merge", nargs="+", metavar="JSON", help="merge these potts_gap.json files into OUTDIR")
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    if args.merge:
        if args.outdir is None:
            args.outdir = args.data  # `--merge` needs no data: OUTDIR may come first
        merge(Path(args.outdir), args.merge)
        return
    if args.smoke:
        args.data, args.outdir, args.M, args.seeds, args.steps = make_smoke_data(), "gap_smoke", 200, 2, 40
        args.eval_every, args.patience = 20, 2
    if args.data is None or args.outdir is None:
        ap.error("DATA.npz and OUTDIR are required (or --smoke)")
    out = Path(args.outdir)
    d = np.load(args.data)
    tr = d["sequences"][: args.M]
    data = {"val": d["val_sequences"], "test": d["test_sequences"]}
    model = pt.Potts(d["J"], d["U"], float(d["beta"]), d["h"] if "h" in d.files else None)
    L, C = model.L, model.C
    res = {
        "data": str(args.data),
        "M": len(tr),
        "beta": model.beta,
        "D_train": pt.hamming_distance(tr, C),
        "nll_star": pt.nll_star(model, data["test"]),
        "uniform": float(np.log(C)),
        "rows": [],
        "transformer_budget": {
            "steps": args.steps,
            "eval_every": args.eval_every,
            "patience": args.patience,
            "min_delta": 1e-4,
            "d_model": 32,
            "heads": 4,
            "batch": 128,
            "lr": 1e-3,
            "warmup": 100,
            "weight_decay": 1e-4,
            "seeds": args.seeds,
        },
    }
    path = out / "potts_gap.json"
    if args.resume and path.exists():
        old = json.loads(path.read_text())
        for k in ("data", "M", "transformer_budget"):
            if old[k] != res[k]:
                raise SystemExit(f"--resume: {path} was made with another {k} ({old[k]!r}, now {res[k]!r})")
        res["rows"] = old["rows"]
    done = {(r["model"], r.get("seed")) for r in res["rows"]}
    t0 = time.time()

    def save(row):
        row["seconds"] = round(time.time() - t0, 1)
        res["rows"].append(row)
        pt.atomic_write_json(path, res)
        print(f"{row['model']}: gap {row['gap']:.5f} ({row['seconds']:.0f} s)", flush=True)

    key = jax.random.PRNGKey(0)
    if ("FA-free, 1 head", None) not in done:
        fit = pt.fit_scan(key, tr, data["val"], C, pt.FitSettings(lams=pt.LAM_GRID, stop_when_worse=True))
        p, best, scan = fit.params, fit.best, fit.entries
        save(
            {
                "model": "FA-free, 1 head",
                "params": pt.param_count(p),
                "lam": best["lam"],
                "fit": best["fit"],
                "scan": [{"lam": e["lam"], "val_nll": e["val_nll"]} for e in scan],
                **pt.fa_metrics(p, model, data),
            }
        )
    if ("plmDCA", None) not in done:
        t1 = time.time()
        p, info = pt.fit_plmdca(tr, C, pt.PLM_LAM)
        save(
            {
                "model": "plmDCA",
                "params": pt.param_count(p),
                "lam": pt.PLM_LAM,
                "fit": info._asdict(),
                **pt.fa_metrics(p, model, data),
                "fit_seconds": time.time() - t1,
            }
        )
    for H in (1, 4):
        name = f"FA-softmax, {H} head{'s' if H > 1 else ''}"
        if (name, None) in done:
            continue
        fit = pt.fit_scan(key, tr, data["val"], C, pt.FitSettings("softmax", heads=(H,), lams=(1e-4,)))
        p, best = fit.params, fit.best
        save(
            {
                "model": name,
                "params": pt.param_count(p),
                "lam": 1e-4,
                "fit": best["fit"],
                **pt.fa_metrics(p, model, data),
            }
        )
    b = res["transformer_budget"]
    runs = [
        (layers, seed)
        for layers in ((1, 2) if args.smoke else args.layers)
        for seed in range(args.seeds)
        if (_tname(layers), seed) not in done
    ]
    for layers, seed in tqdm(runs, desc="transformers", file=sys.stdout):
        cfg = pt.TransformerConfig(
            L,
            C,
            d_model=b["d_model"],
            layers=layers,
            heads=b["heads"],
            steps=args.steps,
            eval_every=b["eval_every"],
            patience=b["patience"],
            lr=b["lr"],
            warmup=b["warmup"],
            batch=b["batch"],
            weight_decay=b["weight_decay"],
            min_delta=b["min_delta"],
        )
        t1 = time.time()
        p, hist = pt.fit_transformer(jax.random.PRNGKey(100 * layers + seed), tr, data["val"], cfg)
        stopped = hist[-1][0] < args.steps
        save(
            {
                "model": _tname(layers),
                "layers": layers,
                "seed": seed,
                "params": pt.param_count(p),
                "history": hist,
                "steps_run": hist[-1][0],
                "early_stopped": stopped,
                "best_step": min(hist, key=lambda h: h[2])[0],
                **pt.fa_metrics(p, model, data, nll=lambda x: pt.transformer_pl_loss(p, x, cfg.heads)),
                "fit_seconds": time.time() - t1,
            }
        )
    res["seconds"] = time.time() - t0
    pt.atomic_write_json(path, res)
    plot(res, out / "potts_gap.png")


def _tname(layers: int) -> str:
    return f"transformer, {layers} layer{'s' if layers > 1 else ''}"


def _order(row):
    """Table order: the baselines in the order they are run, then transformers by depth and seed."""
    base = ["FA-free, 1 head", "plmDCA", "FA-softmax, 1 head", "FA-softmax, 4 heads"]
    return (base.index(row["model"]), 0, 0) if row["model"] in base else (len(base), row["layers"], row["seed"])


def merge(out: Path, parts):
    """Rows of several ``potts_gap.json`` files (processes that shared the work) in one file; the first
    file's row wins a tie.  Parts made from other data or another transformer budget are refused."""
    parts = [json.loads(Path(q).read_text()) for q in parts]
    res = dict(parts[0])
    for q in parts[1:]:
        for k in ("data", "M", "transformer_budget", "nll_star"):
            if q[k] != res[k]:
                raise SystemExit(f"merge: the parts differ in {k}")
    rows, seen = [], set()
    for q in parts:
        for r in q["rows"]:
            if (r["model"], r.get("seed")) not in seen:
                seen.add((r["model"], r.get("seed")))
                rows.append(r)
    res["rows"] = sorted(rows, key=_order)
    res["merged_from"] = len(parts)
    res.pop("seconds", None)
    out.mkdir(parents=True, exist_ok=True)
    pt.atomic_write_json(out / "potts_gap.json", res)
    plot(res, out / "potts_gap.png")


def summary(rows):
    """(name, mean gap, s.e. over seeds or None, n) per model, in row order."""
    names = list(dict.fromkeys(r["model"] for r in rows))
    out = []
    for n in names:
        g = np.array([r["gap"] for r in rows if r["model"] == n])
        out.append((n, float(g.mean()), float(g.std(ddof=1) / np.sqrt(g.size)) if g.size > 1 else None, g.size))
    return out


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = summary(res["rows"])
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    y = np.arange(len(s))
    ax.barh(y, [x[1] for x in s], xerr=[x[2] or 0.0 for x in s], capsize=3, color="tab:blue", alpha=0.8)
    for r in res["rows"]:
        if "seed" in r:
            ax.plot(r["gap"], [x[0] for x in s].index(r["model"]), "k.", ms=3)
    ax.set_yticks(y, [f"{x[0]} (n={x[3]})" if x[3] > 1 else x[0] for x in s], fontsize=8)
    ax.set_xlim(left=0)
    ax.invert_yaxis()
    ax.set_xlabel("test NLL gap to NLL* (nats, linear axis; bars: mean +- s.e. over seeds, dots: seeds)")
    ax.set_title(
        f"L = C = {int(round(res['uniform'] and np.exp(res['uniform'])))}, M = {res['M']}, "
        f"beta = {res['beta']:.3f}, D = {res['D_train']:.2f}",
        fontsize=9,
    )
    ax.xaxis.label.set_size(8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    pt.atomic_write_bytes(path, buf.getvalue())
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
