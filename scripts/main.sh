#!/usr/bin/env bash
# Main job (`./run.sh main`): the hidden-Markov 4-path reproduction (docs/theory.md §9.1,
# docs/results.md): theory at 7 widths x 5 temperatures with T chosen on a validation set, GP
# baselines, the exact order-parameter sampler (4 chains) at N = 10, 30, 100, 1000 as one sweep,
# every cell's diagnostics, the figures, the theory-vs-sampled comparison and the HTML report
# (scripts/reproduce_markov.sh).  The small weight-space NUTS run of the foundation (collapsed NUTS
# at N = 10) is `bash scripts/sample_small.sh`.
set -euo pipefail
bash scripts/reproduce_markov.sh
