"""Sampled attention against the other ways to get attention on the digits in-context task (docs/results.md §2:
16 paths, mean readout, 1000 test episodes): the GD network, the theory at its queries and keys, at the random
queries and keys of its initialisation and at queries and keys learned by the evidence from either
(docs/figures/learn_digits.json, examples/learn_attention_digits.py), and the posterior predictive of the sampled
attention (``run.py --task digits``: benchmarks/attention/cpu_digits.json at N = 100, cpu_digits_gp.json in the GP
limit, where it exists), at the same P, N and T."""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import MissingData, figure, load, table  # noqa: E402
from attention_compare import _minutes, _pct, _spread  # noqa: E402  (the Markov table's formats)

SAMPLED = "benchmarks/attention/cpu_digits.json"
#: the GP-limit run, a second run.py invocation (``--limits gp``); its cases and references join the first file's
SAMPLED_GP = "benchmarks/attention/cpu_digits_gp.json"


def _runs() -> dict:
    """The finite-width file, with the GP-limit file's cases, references and prior draws added where it exists."""
    runs = load(SAMPLED, "benchmarks/attention/run.py --task digits")
    try:
        gp = load(SAMPLED_GP, "benchmarks/attention/run.py --task digits --limits gp")
    except MissingData:
        return runs
    for key in ("cases", "hand_built", "prior_draws"):
        runs[key] = runs[key] + [r for r in gp[key] if r.get("limit") == "gp"]
    return runs


def render() -> str:
    learn = figure("learn_digits.json", "examples/learn_attention_digits.py")
    runs = _runs()
    P, N, T = learn["P"], learn["width"], learn["T"]
    cases = [c for c in runs["cases"] if c["P"] == P and c["temperature"] == T and c["width"] in (N, None)]
    if not cases:
        raise MissingData(f"{SAMPLED}: no case at P = {P}, T = {T} (the references of learn_digits.json)")
    by_limit = {c["limit"]: c for c in cases}
    ref = {(h["limit"], h["width"]): h["accuracy"] for h in runs["hand_built"] if h["P"] == P}
    lr = learn["runs"]

    def both(gp, finite) -> list[str]:
        return [gp if gp is not None else "–", finite if finite is not None else "–"]

    gd_width = re.search(r"width=(\d+)", learn["gd_training"]["config"]).group(1)
    rows = [
        [
            f"GD network (width {gd_width}, trained Q/K, V, a), its own output",
            *both(None, _pct(learn["gd_test_accuracy"])),
            "",
        ],
        ["theory at the GD network's Q/K", *both(None, _pct(lr["theory_gd_qk"]["test_accuracy"])), ""],
        [
            "theory at random Q/K (the GD initialisation)",
            *both(
                _pct(ref[("gp", None)]) if ("gp", None) in ref else None, _pct(lr["theory_random_qk"]["test_accuracy"])
            ),
            "recomputed by run.py: "
            + ", ".join(
                f"{'GP' if k[0] == 'gp' else f'N = {k[1]}'} {_pct(v)}" for k, v in sorted(ref.items(), key=str)
            ),
        ],
    ]
    for key, label in (("evidence_from_random", "random Q/K"), ("evidence_from_gd", "the GD Q/K")):
        e = lr[key]
        rows.append([f"evidence-learned from {label}, theory", *both(None, _pct(e["test_accuracy"])), e["message"]])
    prior = {}  # rank -> limit -> accuracy at the prior draws (one row per rank, both columns)
    for pr in runs["prior_draws"]:
        if pr["P"] == P and (pr["limit"], pr["width"]) in (("gp", None), ("finite", N)):
            prior.setdefault(pr["rank"], {})[pr["limit"]] = _spread(pr["accuracy"])
    for rank, acc in sorted(prior.items()):
        rows.append(
            [
                f"prior draws of the sampled attention (rank {rank}), theory",
                *both(acc.get("gp"), acc.get("finite")),
                "the chains' starting points",
            ]
        )
    for rank in sorted({c["rank"] for c in cases}):
        mine = {k: c for k, c in by_limit.items() if c["rank"] == rank}
        notes = "; ".join(
            f"{'GP' if k == 'gp' else 'N = ' + str(c['width'])}: R-hat {c['max_rhat_f']:.3f}, ESS {c['min_ess_bulk_f']:.0f}, "
            f"{c['chains']} × ({c['warmup']} + {c['draws']}), {_minutes(c['wall_s'])}, chains "
            f"{_pct(min(c['accuracy_per_chain']))}–{_pct(max(c['accuracy_per_chain']))}"
            for k, c in sorted(mine.items())
        )
        rows.append(
            [
                f"**posterior over Q/K** (every token direction, rank {rank}), NUTS on one CPU core",
                *both(
                    _pct(mine["gp"]["accuracy"]) if "gp" in mine else None,
                    _pct(mine["finite"]["accuracy"]) if "finite" in mine else None,
                ),
                notes,
            ]
        )
    return (
        table(["attention", "GP limit", f"N = {N}", "notes"], rows)
        + f"\nP = {P} training episodes, T = {T}, mean readout; accuracy of the sign of the predictor (the posterior "
        "mean of f for sampled attention) on the 1000 test episodes. R-hat and ESS: the largest R-hat and smallest "
        f"bulk ESS of f over the test episodes; 2-core machine ({runs['machine']}), one core; wall time includes "
        "compilation.\n"
    )
