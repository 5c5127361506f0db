#!/usr/bin/env bash
# Main job: sample the hidden-Markov 4-path network at a small width and print its diagnostics.
set -euo pipefail
out="${OUT_DIR:-runs}"
mkdir -p "$out"
bayes-attn sample configs/markov_small.toml --out "$out/markov_small.nc"
bayes-attn diagnose "$out/markov_small.nc"
