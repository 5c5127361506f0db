#!/usr/bin/env bash
# Sample the hidden-Markov 4-path network (P=100, N=10, T=0.01) with collapsed NUTS,
# 4 chains x (500 + 500), and print its diagnostics (the foundation's first main job).
set -euo pipefail
out="${RUN_DIR:-runs}"
mkdir -p "$out"
bayes-attn sample configs/markov_small.toml --out "$out/markov_small.nc"
bayes-attn diagnose "$out/markov_small.nc"
