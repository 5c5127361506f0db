#!/usr/bin/env bash
# A separate virtual environment with pydca 1.23 for the benchmark (never a dependency of the package).
# pydca pins old versions it does not need: install it without them, then what its plmDCA path imports.
# PyPI has only its source distribution: pip compiles the C++ backend (g++ with OpenMP).
#   bash benchmarks/potts_proteins/setup_pydca.sh [VENV_DIR]     (default out/pydca-venv)
set -euo pipefail
venv="${1:-out/pydca-venv}"
py="${PYTHON:-python3.12}"
"$py" -m venv "$venv"
"$venv/bin/pip" install -q --no-deps pydca==1.23
"$venv/bin/pip" install -q numpy==2.5.5 numba==0.68.1 llvmlite==0.50.0 biopython==1.88
"$venv/bin/python" -c "from pydca.plmdca import plmdca; print('pydca ready:', '$venv/bin/python')"
