"""Gap table at M = 3000 (docs/figures/potts_gap.json): one row per model, mean ± s.e. over seeds."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _potts_common import fmt_ms, load, table  # noqa: E402


def render() -> str:
    res = load("potts_gap.json")
    if not res:
        return "_not run: docs/figures/potts_gap.json is missing_\n"
    rows = res["rows"]
    out = []
    for name in dict.fromkeys(r["model"] for r in rows):
        sel = [r for r in rows if r["model"] == name]
        r0 = sel[0]
        if "seed" in r0:
            b = res["transformer_budget"]
            opt = (
                f"AdamW, budget {b['steps']} steps, check every {b.get('eval_every', '?')}, patience "
                f"{b.get('patience', '?')}; ran "
                + ", ".join(str(r["steps_run"]) for r in sel)
                + "; best step "
                + ", ".join(str(r["best_step"]) for r in sel)
                + f"; early stop {sum(r['early_stopped'] for r in sel)}/{len(sel)}"
            )
            if not all(r["early_stopped"] for r in sel):
                drops = []
                for r in sel:
                    h = r["history"]
                    q = [x for x in h if x[0] <= 0.75 * h[-1][0]]
                    drops.append(q[-1][2] - min(x[2] for x in h) if q else float("nan"))
                opt += "; val PL drop over the last 25 % of steps " + ", ".join(f"{x:.4f}" for x in drops)
        else:
            f = r0["fit"]
            opt = f"L-BFGS, {f['iterations']} it., {f['reason']}, grad {f['grad_norm']:.1e}"
        out.append(
            [
                name,
                len(sel),
                r0["params"],
                f"{r0['lam']:g}" if "lam" in r0 else f"wd {res['transformer_budget']['weight_decay']:g}",
                opt,
                fmt_ms([r["test_nll"] for r in sel], 5),
                "**" + fmt_ms([r["gap"] for r in sel], 4) + "**",
                f"{r0['eps_J']:.2f}" if "eps_J" in r0 else "-",
                f"{r0['corr_K']:.3f}" if "corr_K" in r0 else "-",
                f"{r0['corr_A_J']:.3f}" if "corr_A_J" in r0 else "-",
            ]
        )
    head = (
        f"M = {res['M']}, beta = {res['beta']:.4f}, D(train) = {res['D_train']:.3f}, "
        f"NLL* = {res['nll_star']:.5f} nats (uniform {res['uniform']:.3f}).\n\n"
    )
    return head + table(
        [
            "model",
            "seeds",
            "stored params (masked diagonal incl.)",
            "lambda",
            "optimiser",
            "test NLL",
            "gap (mean ± s.e.)",
            "eps_J",
            "corr_K",
            "corr(A_sym, J)",
        ],
        out,
    )
