"""The public API is documented: every name in a public subpackage's ``__all__`` has a docstring of its own, and
the API reference (mkdocs.yml: MkDocs + mkdocstrings, numpydoc convention) builds with ``--strict``."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bayes_attn

ROOT = Path(__file__).resolve().parent.parent
#: the subpackages of the API reference (docs/api/), in layer order
LISTED = [
    "linalg",
    "network",
    "tasks",
    "potts",
    "families",
    "gd",
    "theory",
    "config",
    "inference",
    "inference.models",
    "inference.samplers",
    "diagnostics",
    "sweep",
    "potts_bayes",
]


def public_subpackages() -> list[str]:
    """The listed subpackages and every other package under bayes_attn/ whose path has no component with a
    leading underscore, except the command line (``cli``, documented by ``bayes-attn --help``)."""
    found = [
        m.name.removeprefix("bayes_attn.") for m in pkgutil.walk_packages(bayes_attn.__path__, "bayes_attn.") if m.ispkg
    ]
    found = [n for n in found if n.split(".")[0] != "cli" and not any(p.startswith("_") for p in n.split("."))]
    return LISTED + sorted(set(found) - set(LISTED))


SUBPACKAGES = public_subpackages()
EXPORTS = [(sub, name) for sub in SUBPACKAGES for name in importlib.import_module(f"bayes_attn.{sub}").__all__]


def test_the_listed_subpackages_exist_and_each_has_an_api_page():
    assert set(LISTED) <= set(SUBPACKAGES)
    for sub in SUBPACKAGES:
        page = ROOT / "docs" / "api" / f"{sub}.md"
        assert page.is_file(), f"no API page docs/api/{sub}.md"
        assert f"::: bayes_attn.{sub}" in page.read_text(), page


@pytest.mark.parametrize(("sub", "name"), EXPORTS, ids=[f"{s}.{n}" for s, n in EXPORTS])
def test_every_public_name_has_a_docstring(sub, name):
    module = importlib.import_module(f"bayes_attn.{sub}")
    doc = inspect.getdoc(getattr(module, name))  # lazily resolved names (PEP 562) resolve here too
    assert isinstance(doc, str) and doc.strip(), f"bayes_attn.{sub}.{name} has no docstring"
    # NamedTuples and dataclasses without a docstring get their signature as one: "Name(a, b)", "Name(a: int)"
    assert not (doc.startswith(f"{name}(") and "\n" not in doc.strip()), (
        f"bayes_attn.{sub}.{name} has only the generated docstring {doc!r}"
    )


@pytest.mark.slow  # about 10 s: renders every page and the whole API
def test_the_documentation_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="the dev extra (pip install -e '.[dev]') is not installed")
    pytest.importorskip("mkdocstrings_handlers.python", reason="the dev extra is not installed")
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    # every name of every subpackage's __all__ is rendered on its page (mkdocstrings leaves out what has no
    # docstring, constants included: their docstring is the ``#:`` comment above them, docs/_griffe.py)
    for sub in SUBPACKAGES:
        html = (site / "api" / f"{sub}.html").read_text()
        ids = set(re.findall(rf'id="bayes_attn\.{re.escape(sub)}\.([A-Za-z_0-9]+)"', html))
        missing = [n for n in importlib.import_module(f"bayes_attn.{sub}").__all__ if n not in ids]
        assert not missing, f"docs/api/{sub}.md does not render {missing}"
    # the math is typeset: display and inline math in arithmatex containers, no stray dollar signs
    theory = (site / "theory.html").read_text()
    assert '<div class="arithmatex">' in theory and '<span class="arithmatex">' in theory
    for page in site.rglob("*.html"):
        assert '$<span class="arithmatex">' not in page.read_text(), f"{page}: display math inside a paragraph"
    # the tutorials include their example's source
    assert "request_host_devices" in (site / "tutorials" / "sample_markov.html").read_text()
