"""Profile and floor of one run per sampler x model (benchmarks/profile/results.json): where a run's seconds go,
cold (empty compilation cache) and warm, against its floor (the unit of work timed alone x the units used, plus
the stored quantities timed alone x the kept draws)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, table  # noqa: E402


def _s(x: float) -> str:
    return f"{x:.1f}"


def _chains(run: dict) -> str:
    """How the run's chains ran on its one device: the layout it recorded; runs from before the field existed
    (``chain_method`` absent) were all vectorized; ``"auto"`` is the sampler's registry entry."""
    if "layout" in run:
        return run["layout"]
    method = run.get("chain_method", "vectorized")
    if method == "auto":
        from bayes_attn.config import REGISTRY

        return REGISTRY[run["sampler"]].cpu_chains
    return method


def render() -> str:
    d = load("benchmarks/profile/results.json", "benchmarks/profile/run.py")
    rows = []
    for c in d["cases"]:
        cold, warm = c["cold"], c["warm"]
        floor = warm["floor_s"]
        name = f"{warm['sampler']} / {warm['model']}" + (" (digits)" if warm["task"] == "digits" else "")
        method = _chains(warm)
        if warm["sampler"] == "nuts":
            name += ", chains one after another" if method == "sequential" else ", vectorized chains"
        run = sum(warm[f"{p}_s"] - warm[f"compile_{p}_s"] for p in ("init", "warmup", "end", "sample"))
        rows.append(
            [
                name,
                f"{warm['warmup']} + {warm['draws']}",
                _s(warm["import_s"]),
                _s(warm["data_s"] + warm["model_output_s"] + warm["write_s"]),
                f"{_s(cold['compile_s'])} / {_s(warm['compile_s'])}",
                _s(run),
                f"{warm['unit_s'] * 1e3:.2f} ms × {warm['units']} + {warm['derived_s'] * 1e3:.1f} ms × "
                f"{warm['kept']} = {_s(floor)}",
                f"{_s(cold['total_s'])} / {_s(warm['total_s'])}",
                f"{cold['total_s'] / floor:.2f}× / {warm['total_s'] / floor:.2f}×",
                f"{warm['lockstep_units'] / warm['units']:.2f}×"
                if "lockstep_units" in warm and method == "vectorized"
                else "—",
                f"{cold['cache_bytes'] / 1e6:.1f} MB" if "cache_bytes" in cold else "—",
                f"{warm['min_ess_bulk_f']:.0f}",
            ]
        )
    out = table(
        [
            "sampler / model",
            "warm-up + draws",
            "import s",
            "data + output s",
            "compile s (cold / warm)",
            "sampling s (compile excluded)",
            "floor s: unit × units + stored × draws",
            "total s (cold / warm)",
            "total / floor (cold / warm)",
            "vectorized lockstep / units",
            "cache written (cold)",
            "min bulk ESS of f",
        ],
        rows,
    )
    m = d["machine"]
    return out + (
        f"\nMarkov 4-path task (P = 100, 1000 test inputs) unless marked, N = 10, T = 0.1, 4 chains, one "
        f"claimed core per process (and an idle core borrowed while it compiles, as `bayes-attn sample` does), "
        f"{m['cores']} cores. Seconds of the warm process unless marked; "
        '"compile" is JAX\'s trace, lowering and XLA compile events (a warm cache skips the last); the '
        "unit is the vectorized 4-chain value-and-gradient (Gibbs: one 4-chain sweep), the units the "
        'run\'s gradient evaluations of its busiest chain, warm-up included (Gibbs: sweeps); "lockstep" '
        "counts the vectorized evaluations instead (each iteration waits for its longest tree), where "
        "measured. The unit is timed alone (the fastest of 6 batch means of 10 calls) and is the noisiest number here.\n"
    )
