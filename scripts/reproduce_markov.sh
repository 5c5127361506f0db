#!/usr/bin/env bash
# The hidden-Markov 4-path reproduction (the main job, scripts/main.sh; docs/theory.md §9.1, docs/results.md):
# theory at 7 widths x 5 temperatures (T chosen on a validation set) and GP baselines; the sampled widths
# N = 10, 30, 100, 1000 at the selected temperature run as ONE sweep (bayes_attn.sweep on a Dask
# LocalCluster, one worker per core; resumable: re-running finishes or reuses every cell); then every
# cell's diagnostics, the theory-vs-sampled comparison and HTML report of the sweep, and the figures.
set -euo pipefail
runs="${RUN_DIR:-runs}"
figs="${FIG_DIR:-$runs/figures}"
export RUN_DIR="$runs" FIG_DIR="$figs"
mkdir -p "$runs" "$figs"
python examples/markov_accuracy_vs_width.py --config configs/markov_main.toml
python examples/markov_u_heatmaps.py
python examples/markov_path_kernels.py
python examples/markov_kernel_alignment.py
sweep="$runs/markov4/sweep"
bayes-attn diagnose "$sweep"/cells/*[0-9].nc  # every cell in one process, each under its "== file" header
bayes-attn compare "$sweep" --out "$runs/markov4/compare"
bayes-attn report "$sweep" --out "$runs/markov4/report.html"
echo "figures in $figs; report in $runs/markov4/report.html; theory vs sampled in $runs/markov4/compare"
