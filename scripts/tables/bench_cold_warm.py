"""What a cold process adds to a run (benchmarks/profile/cold_warm.json): cold minus warm, median over repeated
cold/warm pairs of each sampler x model at N = 30, with the part of it that is warm-up and sampling -- the same
compiled programs in both processes, so timing noise -- shown beside it."""

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, minus, table  # noqa: E402
from bench_profile import _chains  # noqa: E402

#: the target: a lone cold run at most this many seconds longer than a warm one
TARGET_S = 5.0


def _s(x: float) -> str:
    return minus(f"{x:.1f}")


def render() -> str:
    d = load("benchmarks/profile/cold_warm.json", "benchmarks/profile/run.py --cold-warm")
    rows = []
    for c in d["cases"]:
        reps = c["repeats"]
        warm = reps[0]["warm"]
        name = f"{warm['sampler']} / {warm['model']}" + (" (digits)" if warm["task"] == "digits" else "")
        if warm["sampler"] == "nuts":
            name += ", chains one after another" if _chains(warm) == "sequential" else ", vectorized chains"
        diff = [r["cold_minus_warm_s"] for r in reps]
        med = statistics.median(diff)
        rows.append(
            [
                name,
                f"{reps[0]['warmup']} + {reps[0]['draws']}",
                len(reps),
                f"{_s(statistics.median(r['cold_total_s'] for r in reps))} / "
                f"{_s(statistics.median(r['warm_total_s'] for r in reps))}",
                f"{_s(statistics.median(r['cold_compile_s'] for r in reps))} / "
                f"{_s(statistics.median(r['warm_compile_s'] for r in reps))}",
                f"**{minus(f'{med:.2f}')}** ({_s(min(diff))} – {_s(max(diff))})",
                _s(statistics.median(r["cold_minus_warm_sampling_s"] for r in reps)),
                "yes" if med <= TARGET_S else "**no**",
            ]
        )
    out = table(
        [
            "sampler / model",
            "warm-up + draws",
            "pairs",
            "total s (cold / warm), median",
            "compile s (cold / warm), median",
            "cold − warm s: median (min – max)",
            "of which warm-up + sampling s, median",
            f"≤ {TARGET_S:.0f} s",
        ],
        rows,
    )
    m, w = d["machine"], d["cases"][0]["width"]
    return out + (
        f"\nMarkov 4-path task (P = 100, 1000 test inputs) unless marked, N = {w}, T = 0.1, 4 chains, "
        f"{m['cores']} cores; each process on one claimed core, borrowing an idle one while it compiles, as "
        "`bayes-attn sample` runs. A pair is a cold process (an empty compilation cache of its own) followed by a "
        "warm one (the cache it filled); the pairs of all cases are run round-robin. Runs are short because what "
        "a cold process adds does not depend on the length, while warm-up and sampling run the same compiled "
        "programs in both processes and only add noise to the difference (its median is in the next-to-last "
        "column).\n"
    )
