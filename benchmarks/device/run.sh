#!/usr/bin/env bash
# Device benchmark (benchmarks/device/run.py): full-weight NUTS at N = 100, the order-parameter chain at
# N = 10^5, exact Gibbs at N = 1000 with 64 chains, the 16-path digits theory; JSON next to this script.
#   bash benchmarks/device/run.sh            # on a GPU node (<= 8 minutes on one GPU)
#   bash benchmarks/device/run.sh --smoke    # tiny sizes on the CPU (the test suite runs this)
set -euo pipefail
cd "$(dirname "$0")/../.."
py="${PYTHON:-.venv/bin/python}"
[ -x "$py" ] || py=python
exec "$py" benchmarks/device/run.py "$@"
