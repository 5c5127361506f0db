#!/usr/bin/env bash
# The hidden-Markov 4-path reproduction (the main job, scripts/main.sh) (docs/theory.md §9.1, docs/results.md), sized to finish in
# about 11 minutes on 2 CPU cores: theory at 7 widths x 5 temperatures (T chosen on a validation set), GP
# baselines, the exact order-parameter sampler (4 chains) at 4 widths with diagnostics, the theory-vs-sampled
# comparison, the HTML report and the figures.
set -euo pipefail
runs="${RUN_DIR:-runs}"
figs="${FIG_DIR:-$runs/figures}"
export RUN_DIR="$runs" FIG_DIR="$figs"
mkdir -p "$runs" "$figs"
python examples/markov_accuracy_vs_width.py --config configs/markov_main.toml
python examples/markov_u_heatmaps.py
python examples/markov_path_kernels.py
python examples/markov_kernel_alignment.py
bayes-attn report "$runs/markov4" --theory "$runs/markov4/theory.nc" --out "$runs/markov4/report.html"
for run in "$runs"/markov4/N*.nc; do bayes-attn diagnose "$run"; done
# theory vs sampled at every sampled width: table + plots (the CLI's theory file layout)
bayes-attn theory configs/markov_main.toml --out "$runs/markov4/theory_scan.nc"
bayes-attn compare "$runs/markov4/theory_scan.nc" "$runs"/markov4/N*.nc --out "$runs/markov4/compare"
echo "figures in $figs; report in $runs/markov4/report.html; theory vs sampled in $runs/markov4/compare"
