"""The package's layers import only downwards (README "Architecture"), anywhere in a module.

linalg -> network -> {tasks, potts, families, gd} -> theory -> config -> inference -> diagnostics
-> {sweep, potts_bayes} -> cli.
An import of a higher layer (or of a sibling on the same level), even inside a function, fails.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "bayes_attn"
#: layer of every subpackage; modules directly under bayes_attn (``_errors``, ``_io``, ...) are layer 0
LAYERS = {
    "linalg": 1,
    "network": 2,
    "tasks": 3,
    "potts": 3,
    "families": 3,
    "gd": 3,
    "theory": 4,
    "config": 5,
    "inference": 6,
    "diagnostics": 7,
    "sweep": 8,
    "potts_bayes": 8,
    "cli": 9,
}
#: imports of a sibling or higher layer that are allowed, each for its reason: ``(module, layer it imports)``.
#: ``potts/__init__.py``: the deprecation shim (PEP 562 ``__getattr__``) of the names that moved from potts to
#: families; it imports families by name (``importlib.import_module``) only when an old name is used.
SHIMS = {("potts/__init__.py", "families")}


def _package_of(module: Path) -> str | None:
    rel = module.relative_to(ROOT).parts
    return rel[0] if len(rel) > 1 else None


def _imported_packages(module: Path):
    """``(line, package)`` of every import of a ``bayes_attn`` subpackage in ``module``."""
    tree = ast.parse(module.read_text())
    own = module.relative_to(ROOT).parts[:-1]  # package path of the module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(own[: len(own) - node.level + 1])
                parts = base + (node.module.split(".") if node.module else [])
                names = [parts] if parts else [[a.name] for a in node.names]
                if not parts:  # "from .. import potts"
                    names = [[a.name] for a in node.names]
            elif node.module and node.module.split(".")[0] == "bayes_attn":
                parts = node.module.split(".")[1:]
                names = [parts] if parts else [[a.name] for a in node.names]
            else:
                continue
            for p in names:
                if p and p[0] in LAYERS:
                    yield node.lineno, p[0]
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "bayes_attn" and len(parts) > 1 and parts[1] in LAYERS:
                    yield node.lineno, parts[1]
        elif (name := _import_module_arg(node)) is not None:
            parts = name.split(".")
            if parts[0] == "bayes_attn" and len(parts) > 1 and parts[1] in LAYERS:
                yield node.lineno, parts[1]


def _import_module_arg(node) -> str | None:
    """The module named by a call ``importlib.import_module("bayes_attn....")`` (or ``_importlib.import_module``)
    with a constant absolute name; ``None`` for any other node."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"):
        return None
    if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
        return None
    return node.args[0].value if not node.args[0].value.startswith(".") else None


MODULES = sorted(ROOT.rglob("*.py"))


def test_every_subpackage_has_a_layer():
    subpackages = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert subpackages <= set(LAYERS), subpackages - set(LAYERS)


@pytest.mark.parametrize("module", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_upward_or_sideways_import(module):
    pkg = _package_of(module)
    level = LAYERS.get(pkg, 0)
    rel = "/".join(module.relative_to(ROOT).parts)
    bad = [
        f"line {line}: imports {target} (layer {LAYERS[target]})"
        for line, target in _imported_packages(module)
        if target != pkg and LAYERS[target] >= level and (rel, target) not in SHIMS
    ]
    assert not bad, f"{module.relative_to(ROOT)} (layer {level}): " + "; ".join(bad)


def test_the_check_catches_an_upward_import(tmp_path):
    """The scanner itself: an import of inference inside a theory function is found."""
    fake = ROOT / "theory" / "_probe_for_test.py"
    try:
        fake.write_text("def f():\n    from ..inference import sample\n    return sample\n")
        assert list(_imported_packages(fake)) == [(2, "inference")]
    finally:
        fake.unlink()


def test_every_allowed_shim_is_still_there():
    """An entry of SHIMS names an import the scanner finds (no stale permission), and the potts shim is the
    name-by-string import of its ``__getattr__``."""
    for rel, target in SHIMS:
        assert target in {t for _, t in _imported_packages(ROOT / rel)}, (rel, target)
    tree = ast.parse((ROOT / "potts" / "__init__.py").read_text())
    getattr_fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__")
    assert "bayes_attn.families" in {_import_module_arg(n) for n in ast.walk(getattr_fn)}


def test_no_module_is_over_the_size_limit():
    """README: no module over ~400 lines."""
    big = [
        f"{m.relative_to(ROOT)}: {len(m.read_text().splitlines())}"
        for m in MODULES
        if len(m.read_text().splitlines()) > 420
    ]
    assert not big, big


def test_every_declared_dependency_is_imported():
    """README "Dependencies": a declared dependency is one the package imports."""
    import tomllib

    names = {"scikit-learn": "sklearn"}
    deps = tomllib.loads((ROOT.parent / "pyproject.toml").read_text())["project"]["dependencies"]
    imported = set()
    for module in MODULES:
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
    for dep in deps:
        name = dep.split(">")[0].split("=")[0].split("<")[0].strip()
        assert names.get(name, name).replace("-", "_") in imported, f"{name} is declared but never imported"
