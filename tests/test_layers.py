"""The package's layers import only downwards (README "Architecture"), anywhere in a module, and no modules import
each other in a circle.

linalg -> network -> {tasks, potts, families, gd} -> theory -> config -> inference -> diagnostics
-> {sweep, potts_bayes} -> cli.
An import of a higher layer (or of a sibling on the same level), even inside a function, fails; so does a circle
in the import graph of the package's modules (those directly under bayes_attn/ included, imports inside functions
included), such as _cache importing _cpus while _cpus imported _cache inside a function.
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


def _module_name(path: Path, root: Path) -> str:
    """``bayes_attn.potts._fit`` for ``<root>/potts/_fit.py``, ``bayes_attn.potts`` for its ``__init__.py``."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, anywhere in its source (inside functions too), for every
    ``.py`` file under ``root`` (the ``bayes_attn`` folder).  Relative imports are resolved; ``from P import x``
    is an edge to the module ``P.x`` when there is one, else to ``P``; an ``importlib.import_module`` of a
    constant name counts too.  Importing a module does not count as importing its parent packages (every
    submodule would then close a circle with its package's ``__init__``)."""
    paths = {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    top = root.name

    def known(name: str) -> str | None:  # the longest prefix of ``name`` that is a module of the package
        parts = name.split(".")
        while parts and ".".join(parts) not in paths:
            parts.pop()
        return ".".join(parts) or None

    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + (node.module.split(".") if node.module else []))
                elif node.module and node.module.split(".")[0] == top:
                    source = node.module
                else:
                    continue
                for a in node.names:
                    targets.add(f"{source}.{a.name}" if f"{source}.{a.name}" in paths else known(source))
            elif isinstance(node, ast.Import):
                targets |= {known(a.name) for a in node.names if a.name.split(".")[0] == top}
            elif (arg := _import_module_arg(node)) is not None and arg.split(".")[0] == top:
                targets.add(known(arg))
        graph[name] = targets - {None, name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A circle of the graph as ``[a, b, ..., a]``, or ``None`` when it has none (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_no_circle_of_imports():
    graph = import_graph()
    assert {"bayes_attn._cache", "bayes_attn._cpus", "bayes_attn.potts._fit"} <= set(graph)
    assert "bayes_attn._threads" in graph["bayes_attn._cpus"] and "bayes_attn._cpus" in graph["bayes_attn._cache"]
    cycle = find_cycle(graph)
    assert cycle is None, "modules import each other in a circle: " + " -> ".join(cycle)


def test_the_check_catches_a_planted_circle(tmp_path):
    """Two synthetic modules that import each other, one of them inside a function and through a subpackage's
    relative import, form a circle; so does one edge planted into the real graph."""
    pkg = tmp_path / "bayes_attn"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from ._b import g\n")
    (pkg / "_a.py").write_text("import os\n\nfrom .sub import _b\n")
    (pkg / "sub" / "_b.py").write_text("def g():\n    from .._a import os\n    return os\n")
    graph = import_graph(pkg)
    assert graph["bayes_attn._a"] == {"bayes_attn.sub._b"} and graph["bayes_attn.sub._b"] == {"bayes_attn._a"}
    assert find_cycle(graph) == ["bayes_attn._a", "bayes_attn.sub._b", "bayes_attn._a"]
    (pkg / "sub" / "_b.py").write_text("def g():\n    return 1\n")  # the circle broken: none found
    assert find_cycle(import_graph(pkg)) is None

    real = import_graph()
    real["bayes_attn._threads"] = real["bayes_attn._threads"] | {"bayes_attn._cache"}  # _cache -> _threads exists
    cycle = find_cycle(real)
    assert cycle is not None and "bayes_attn._threads" in cycle and "bayes_attn._cache" in cycle
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"a", "c"}}) is None


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
