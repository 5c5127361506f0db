#!/usr/bin/env bash
# One command sets everything up and runs a job:
#   ./run.sh main    # create .venv (Python >= 3.12) if missing, install, run the main job
#   ./run.sh test    # create .venv if missing, install with test extras, run the fast test suite
#   ./run.sh test-all  # the fast suite, then the slow statistical tests (a second session)
#   ./run.sh lint    # install the dev extra and run ruff: the formatter's check, then the linter (CI runs it first)
#   ./run.sh docs [DIR]  # install the dev extra and build the documentation site strictly into DIR (default site/)
set -euo pipefail
cd "$(dirname "$0")"
job="${1:-main}"; shift || true

find_python() {
  # the first Python >= 3.12 of: $PYTHON, python3.13, python3.12 and python3 on PATH, then the pyenv versions
  # (${PYENV_ROOT:-$HOME/.pyenv}/versions/*, newest first)
  local c
  while IFS= read -r c; do
    [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 \
      && "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' </dev/null >/dev/null 2>&1 \
      && { echo "$c"; return 0; }
  done < <(
    printf '%s\n' "${PYTHON:-}" python3.13 python3.12 python3
    printf '%s\n' "${PYENV_ROOT:-${HOME:-}/.pyenv}"/versions/*/bin/python3 | sort -rV
  )
  return 1
}

if [ ! -x .venv/bin/python ]; then
  py=$(find_python) || { echo "error: Python >= 3.12 not found (set PYTHON=/path/to/python3.12)" >&2; exit 2; }
  echo "creating .venv with $py"
  "$py" -m venv .venv
fi
stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test]"
  touch "$stamp"
fi
export PATH="$PWD/.venv/bin:$PATH"

case "$job" in
  main) exec bash scripts/main.sh "$@" ;;
  test) exec python -m pytest -q -n 2 "$@" ;;
  test-all)
    # two sessions: the fast suite compiles at XLA's level 0, the slow set at the default level (tests/conftest.py)
    python -m pytest -q -n 2 "$@" && fast=0 || fast=$?
    python -m pytest -q -n 2 -m slow --dist worksteal "$@" && slow=0 || slow=$?
    for rc in "$fast" "$slow"; do [ "$rc" = 0 ] || [ "$rc" = 5 ] || exit "$rc"; done  # 5: no test selected
    [ "$fast$slow" != 55 ] || exit 5
    exit 0 ;;
  lint)
    command -v ruff >/dev/null 2>&1 || python -m pip install -q -e ".[test,dev]"
    ruff format --check . >/dev/null || { ruff format --check . ; echo "error: run 'ruff format .'" >&2; exit 1; }
    exec ruff check "$@" . ;;
  docs)
    python -c 'import mkdocs, mkdocstrings_handlers.python, material' 2>/dev/null || python -m pip install -q -e ".[test,dev]"
    NO_MKDOCS_2_WARNING=1 exec python -m mkdocs build --strict -d "${1:-site}" ;;
  *) echo "usage: ./run.sh {main|test|test-all|lint|docs} [args]" >&2; exit 2 ;;
esac
