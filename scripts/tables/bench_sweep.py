"""docs/benchmarks.md: the sweep benchmark, processes vs sweep with 1 and 2 workers; warm vs cold
theory.

Reads benchmarks/sweep/results.json (benchmarks/sweep/run.py) and, where it exists,
benchmarks/sweep/results_workers.json (the same script with ``--ways sweep_1 sweep_2``: the workers rerun
after they were pinned to one core each).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, table  # noqa: E402

WAYS = {
    "processes": "8 cells as separate `sample` + `theory` processes, compilation cache off",
    "processes_warm_cache": "the same, persistent compilation cache on and warm",
    "sweep_1": "`bayes-attn sweep --workers 1` (cache off)",
    "sweep_2": "`bayes-attn sweep --workers 2` (cache off)",
}


def render() -> str:
    d = load("benchmarks/sweep/results.json", "benchmarks/sweep/run.py")
    if d["meta"]["smoke"]:
        raise SystemExit("benchmarks/sweep/results.json is a --smoke run; rerun the full benchmark")
    med = d["median_wall_s"]
    rows = [
        [
            WAYS[k],
            f"{med[k]:.0f} s",
            ", ".join(f"{t:.0f}" for t in d["wall_s"][k]) + " s",
            f"{med['processes'] / med[k]:.2f}×",
        ]
        for k in WAYS
    ]
    th = d["theory"]
    sc, sw = th["split_cold"], th["split_warm"]
    split = table(
        [
            "`bayes-attn theory`, 3 widths",
            "end to end",
            "import",
            "data",
            "first solve (compile + solve)",
            "each further solve",
        ],
        [
            [
                lab,
                f"{th[f'theory_{lab}_s']:.1f} s",
                f"{s['import_s']:.1f} s",
                f"{s['data_s']:.1f} s",
                f"{s['first_solve_s']:.1f} s",
                f"{s['other_solves_s']:.2f} s",
            ]
            for lab, s in (("cold", sc), ("warm", sw))
        ],
    )
    return (
        table(["how the grid runs", "median wall", "runs", "speed-up over processes"], rows)
        + f"\nsweep, 1 worker vs processes: {d['ratio_processes_over_sweep_1']:.2f}× faster (target ≥ 1.5); "
        f"2 workers vs 1: {d['ratio_sweep_1_over_sweep_2']:.2f}× (target ≥ 1.5); "
        f"{d['meta']['repeats']} interleaved repeats, {d['meta']['cpu_count']} cores.\n\n"
        + split
        + f"\nwarm cache vs cold, end to end: {th['ratio_cold_over_warm']:.2f}× faster (target ≥ 2).\n"
        + _workers(med["processes"])
        + _full()
    )


def _optional(name: str, script: str, ways: set):
    """``benchmarks/sweep/NAME`` (a full run of at least ``ways``), or ``None`` where the file does not exist."""
    rel = f"benchmarks/sweep/{name}"
    if not (Path(__file__).resolve().parents[2] / rel).is_file():
        return None
    d = load(rel, script)
    if d["meta"]["smoke"] or not ways <= set(d["median_wall_s"]):
        raise SystemExit(f"{rel} must be a full run of {', '.join(sorted(ways))}")
    return d


def _full() -> str:
    """benchmarks/sweep/results_full.json: grid_full.toml, the full 4 chains x (500 + 1000), all three ways."""
    f = _optional(
        "results_full.json",
        "benchmarks/sweep/run.py --grid benchmarks/sweep/grid_full.toml",
        {"processes", "sweep_1", "sweep_2"},
    )
    if f is None:
        return ""
    med, runs = f["median_wall_s"], f["meta"]["runs_per_way"]
    rows = [
        [
            WAYS[k] + ("" if k.startswith("processes") else ", workers pinned"),
            f"{med[k]:.0f} s" if runs[k] > 1 else f"{med[k]:.0f} s (one run)",
            ", ".join(f"{t:.0f}" for t in f["wall_s"][k]) + " s",
            f"{med['processes'] / med[k]:.2f}×",
        ]
        for k in ("processes", "sweep_1", "sweep_2")
    ]
    return (
        "\nAt the full size, 4 chains × (500 + 1000) per cell (`benchmarks/sweep/grid_full.toml`, all "
        "ways side by side in one run):\n\n"
        + table(["how the grid runs", "median wall", "runs", "speed-up over processes"], rows)
        + f"\nsweep, 1 worker vs processes: {f['ratio_processes_over_sweep_1']:.2f}× (target ≥ 1.5); "
        f"2 workers vs 1: {f['ratio_sweep_1_over_sweep_2']:.2f}× (target ≥ 1.5); "
        f"{f['meta']['repeats']} interleaved repeats ({runs['processes']} with the processes), "
        f"{f['meta']['cpu_count']} cores.\n"
    )


def _workers(processes_s: float) -> str:
    """benchmarks/sweep/results_workers.json (``--ways sweep_1 sweep_2``, pinned workers); ``processes_s``: the
    median processes wall time of results.json, for the cross-run ratio."""
    w = _optional("results_workers.json", "benchmarks/sweep/run.py --ways sweep_1 sweep_2", {"sweep_1", "sweep_2"})
    if w is None:
        return ""
    med = w["median_wall_s"]
    rows = [
        [WAYS[k] + ", workers pinned", f"{med[k]:.0f} s", ", ".join(f"{t:.0f}" for t in w["wall_s"][k]) + " s"]
        for k in ("sweep_1", "sweep_2")
    ]
    return (
        "\nWorkers pinned to one core each (the same grid, rerun side by side):\n\n"
        + table(["how the grid runs", "median wall", "runs"], rows)
        + f"\n2 workers vs 1: {w['ratio_sweep_1_over_sweep_2']:.2f}× (target ≥ 1.5); "
        f"1 pinned worker vs the processes of the run above (not side by side): {processes_s / med['sweep_1']:.2f}×; "
        f"{w['meta']['repeats']} interleaved repeats, {w['meta']['cpu_count']} cores.\n"
    )
