"""run.sh finds a Python >= 3.12 on any machine: ``$PYTHON``, then ``python3.13``, ``python3.12`` and ``python3`` on
PATH, then the pyenv versions it can list (``${PYENV_ROOT:-$HOME/.pyenv}/versions/*/bin/python3``, newest first), each
one checked; no machine's install path comes first."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIND_PYTHON = re.search(r"^find_python\(\) \{\n.*?^\}\n", (ROOT / "run.sh").read_text(), re.S | re.M).group(0)


def _interpreter(path: Path, ok: bool) -> str:
    """A stand-in interpreter at ``path`` whose version check passes (``ok``) or fails (an older Python)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\nexit {0 if ok else 1}\n")
    path.chmod(0o755)
    return str(path)


def _find(tmp_path: Path, *, on_path: dict[str, bool], pyenv: dict[str, bool], python: str | None = None):
    """``(exit status, output)`` of run.sh's find_python with only the stand-ins ``on_path`` on PATH (name: passes)
    and the pyenv versions ``pyenv`` (version: passes) under a PYENV_ROOT of the test's own."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    os.symlink(shutil.which("sort"), bin_dir / "sort")  # the one external command find_python runs
    for name, ok in on_path.items():
        _interpreter(bin_dir / name, ok)
    for version, ok in pyenv.items():
        _interpreter(tmp_path / "pyenv" / "versions" / version / "bin" / "python3", ok)
    env = {"PATH": str(bin_dir), "PYENV_ROOT": str(tmp_path / "pyenv"), "HOME": str(tmp_path)}
    if python is not None:
        env["PYTHON"] = python
    proc = subprocess.run(
        [shutil.which("bash"), "-c", FIND_PYTHON + "find_python"], env=env, capture_output=True, text=True, timeout=30
    )
    return proc.returncode, proc.stdout.strip()


def test_path_lacking_python312_falls_back_to_the_newest_pyenv_version_that_passes(tmp_path):
    """python3 on PATH is too old: the pyenv versions are tried newest first by version, not by name (3.12 after
    3.14, before 3.9), and one that fails its check (3.14.0 here) is passed over."""
    versions = {"3.9.18": True, "3.11.7": False, "3.12.1": True, "3.14.0": False}
    code, out = _find(tmp_path, on_path={"python3": False}, pyenv=versions)
    assert code == 0 and out == str(tmp_path / "pyenv" / "versions" / "3.12.1" / "bin" / "python3"), out


@pytest.mark.parametrize(
    "on_path, python, chosen",
    [
        ({"python3.13": True, "python3.12": True, "python3": True}, "mine", "mine"),  # $PYTHON first
        ({"python3.13": False, "python3.12": True, "python3": True}, None, "python3.12"),
        ({"python3.12": False, "python3": True}, None, "python3"),  # before any pyenv version
        ({"python3": True}, "", "python3"),  # an empty $PYTHON is no choice
    ],
)
def test_python_then_path_before_pyenv(tmp_path, on_path, python, chosen):
    if python == "mine":
        python = chosen = _interpreter(tmp_path / "mine" / "python", True)
    code, out = _find(tmp_path, on_path=on_path, pyenv={"3.13.0": True}, python=python)
    assert code == 0 and out == chosen, out


def test_nothing_new_enough_is_exit_1_and_no_output(tmp_path):
    code, out = _find(tmp_path, on_path={"python3": False}, pyenv={"3.11.7": False}, python=str(tmp_path / "none"))
    assert (code, out) == (1, "")
    code, out = _find(tmp_path / "no-pyenv", on_path={}, pyenv={})  # no pyenv folder at all
    assert (code, out) == (1, "")
