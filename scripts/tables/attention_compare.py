"""Sampled attention against the other ways to get attention on the hidden-Markov task (Markov 4 paths, T = 0.1,
1000 test sequences): the theory at the hand-built heads and at prior draws of the attention
(benchmarks/attention/references.json, ``run.py --references-only``), evidence-learned heads
(docs/figures/learn_markov_scan.json, examples/learn_attention_markov_scan.py), the gradient-trained network
and the theory at its queries and keys (benchmarks/attention/gd_markov.json and, without early stopping, gd_markov_no_stopping.json; gd_markov.py), and the posterior
predictive of the sampled attention (benchmarks/attention/cpu_*.json on the 2-core machine, gpu_*.json on one
H200; run.py)."""

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import ROOT, figure, load, table  # noqa: E402

#: the sampled runs (benchmarks/attention/run.py), one file per case group: on the 2-core machine (cpu_*) and on one
#: H200 GPU (gpu_*, more and longer chains)
SAMPLED = (
    "benchmarks/attention/cpu_gp.json",
    "benchmarks/attention/cpu_n100.json",
    "benchmarks/attention/cpu_gp_r4.json",
    "benchmarks/attention/cpu_n100_r4.json",
    "benchmarks/attention/gpu_r4.json",
    "benchmarks/attention/gpu_r4_n100.json",
)


def _where(case) -> str:
    return "one H200" if case["device"].startswith("cuda") else "one CPU core"


#: evidence-learned configurations of examples/learn_attention_markov_scan.py shown here, with their label
EVIDENCE = {
    "qk P=100 T=0.1": "every token direction, rank 2",
    "qk rank 4 P=100 T=0.1 basis pos+PC2, 300 steps": "pos+PC2, rank 4",
    "qk rank 33 P=100 T=0.1 basis pos+PC2, 300 steps": "pos+PC2, rank 33",
    "qk rank 4 P=400 T=0.1 basis pos+PC2, 300 steps": "pos+PC2, rank 4",
}


def _pct(a) -> str:
    return f"{100 * a:.1f} %"


def _chains(case) -> str:
    """Per-chain accuracy range and its rank correlation with the chain's mean log density: chains at different
    density levels that predict differently sit in different modes."""
    from scipy.stats import spearmanr

    acc, lp = case["accuracy_per_chain"], case["lp_per_chain"]
    rho = spearmanr(acc, lp).statistic
    return (
        f", chains {_pct(min(acc))}–{_pct(max(acc))}, mean log density spread {max(lp) - min(lp):.1f} nats, "
        f"Spearman ρ(log density, accuracy) {rho:.2f}"
    )


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _spread(values) -> str:
    if len(values) == 1:
        return _pct(values[0])
    return f"{_pct(statistics.mean(values))} ± {100 * statistics.stdev(values):.1f} (n = {len(values)})"


def render() -> str:
    ref = load("benchmarks/attention/references.json", "benchmarks/attention/run.py --references-only")
    gd = load("benchmarks/attention/gd_markov.json", "benchmarks/attention/gd_markov.py")
    long = load("benchmarks/attention/gd_markov_no_stopping.json", "benchmarks/attention/gd_markov.py --patience 1000")
    scan = figure("learn_markov_scan.json", "examples/learn_attention_markov_scan.py")
    sampled = [
        c for rel in SAMPLED if (ROOT / rel).is_file() for c in load(rel, "benchmarks/attention/run.py")["cases"]
    ]
    rows = []
    for P in sorted({h["P"] for h in ref["hand_built"]} | {r["P"] for r in gd["runs"]}):
        hand = {h["limit"]: h["accuracy"] for h in ref["hand_built"] if h["P"] == P}
        if hand:
            rows.append(
                [P, "hand-built heads (good, rand / unif, rand), theory", _pct(hand["gp"]), _pct(hand["finite"]), ""]
            )
        for pr in ref["prior_draws"]:
            if pr["P"] == P and pr["limit"] == "finite":
                gp = next(
                    q for q in ref["prior_draws"] if q["P"] == P and q["limit"] == "gp" and q["basis"] == pr["basis"]
                )
                rows.append(
                    [
                        P,
                        f"prior draws of the sampled attention ({pr['basis'].replace('_', '+').replace('pc2', 'PC2')}, "
                        f"rank {pr['rank']}), theory",
                        _spread(gp["accuracy"]),
                        _spread(pr["accuracy"]),
                        "the chains' starting points",
                    ]
                )
        for name, label in EVIDENCE.items():
            e = scan.get(name)
            if e is not None and e["P"] == P:
                rows.append(
                    [
                        P,
                        f"evidence-learned ({label}), theory",
                        "–",
                        _pct(e["test_accuracy_learned"]),
                        f"fit-attention at N = {e['width']}: {e['message']}, {e['seconds']:.0f} s",
                    ]
                )
        runs = [r for r in gd["runs"] if r["P"] == P]
        if runs:
            w = runs[0]["config"]["width"]
            cost = statistics.median(r["train_s"] for r in runs)
            rows.append(
                [
                    P,
                    f"gradient-trained network (width {w}, learned Q/K on the tokens), its own output",
                    "–",
                    _spread([r["test_accuracy"] for r in runs]),
                    f"AdamW, early stopping on a held-out fifth; training accuracy "
                    f"{_spread([r['train_accuracy'] for r in runs])}; median {cost:.0f} s to train",
                ]
            )
            rows.append(
                [
                    P,
                    "theory at the gradient-trained Q/K",
                    _spread([r["gp_at_gd_attention"] for r in runs]),
                    _spread([r["theory_at_gd_attention"] for r in runs]),
                    "",
                ]
            )
        for r in (r for r in long["runs"] if r["P"] == P):
            rows.append(
                [
                    P,
                    f"gradient-trained network, {r['config']['steps']} steps without early stopping "
                    f"(lr {r['config']['lr']:g}), its own output",
                    "–",
                    _pct(r["test_accuracy"]),
                    f"training accuracy {_pct(r['train_accuracy'])}; best validation {_pct(r['best_val_accuracy'])} "
                    f"at step {r['best_step']}",
                ]
            )
        cases = [c for c in sampled if c["P"] == P]
        for basis, rank, where in sorted({(c["basis"], c["rank"], _where(c)) for c in cases}, key=lambda k: k[::-1]):
            by = {c["limit"]: c for c in cases if (c["basis"], c["rank"], _where(c)) == (basis, rank, where)}

            def cell(limit):
                c = by.get(limit)
                return "–" if c is None else _pct(c["accuracy"])

            notes = "; ".join(
                f"{'GP' if k == 'gp' else 'N = ' + str(c['width'])}: R-hat {c['max_rhat_f']:.3f}, "
                f"ESS {c['min_ess_bulk_f']:.0f}, {c['chains']} × ({c['warmup']} + {c['draws']}), {_minutes(c['wall_s'])}"
                + (_chains(c) if c["chains"] > 4 else "")
                for k, c in sorted(by.items())
            )
            label = basis.replace("_", "+").replace("pc2", "PC2")
            rows.append(
                [
                    P,
                    f"**posterior over Q/K** ({label}, rank {rank}), NUTS on {where}",
                    cell("gp"),
                    cell("finite"),
                    notes,
                ]
            )
    head = ["P", "attention", "GP limit", "N = 100", "notes"]
    return (
        table(head, rows)
        + "\nAccuracy of the sign of the predictor (the posterior mean of f for sampled attention) on the 1000 test "
        "sequences; T = 0.1. R-hat and ESS: the largest R-hat and smallest bulk ESS of f over the test sequences; "
        f"2-core machine ({ref['machine']}), one core per run, except the rows sampled on one H200 GPU (float64); "
        "wall times include compilation.\n"
    )
