"""Griffe extension for the API reference (mkdocs.yml, ``plugins: mkdocstrings``): three conventions of the
package that griffe does not read by itself.

* A ``#:`` comment on the lines above an assignment, or after it on the same line (Sphinx's convention, used
  for the package's constants and fields), is the attribute's docstring.
* Sphinx roles in docstrings (``:func:`name```, ``:class:`~pkg.Name```) are shown as code spans.
* A name of ``__all__`` that a package resolves on first use (PEP 562 ``__getattr__``, as
  :mod:`bayes_attn.inference` does) is documented as an alias of the object it resolves to.

This file is build tooling, not a page (``exclude_docs`` in mkdocs.yml).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
from pathlib import Path

from griffe import Alias, Attribute, Docstring, Extension, Module, Object

ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`]+)`")


def _code_spans(text: str) -> str:
    """``:role:`target``` -> a code span of the target (of its last dotted part for ``~target``, as Sphinx)."""
    return ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", text)


class PackageConventions(Extension):
    def __init__(self) -> None:
        super().__init__()
        self._lines: dict[Path, list[str]] = {}

    def _source(self, path: Path) -> list[str]:
        if path not in self._lines:
            self._lines[path] = path.read_text().splitlines()
        return self._lines[path]

    def on_instance(self, *, node, obj: Object, agent, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _code_spans(obj.docstring.value)

    def on_attribute_instance(self, *, node, attr: Attribute, agent, **kwargs) -> None:
        if attr.docstring is not None or not isinstance(node, ast.AST) or not attr.lineno:
            return
        path = attr.filepath
        if not isinstance(path, Path) or path.suffix != ".py":
            return
        lines = self._source(path)
        line = lines[attr.lineno - 1]
        indent = line[: len(line) - len(line.lstrip())]
        comment = []
        i = attr.lineno - 2
        while i >= 0 and lines[i].startswith(indent + "#:"):
            comment.insert(0, lines[i][len(indent) + 2 :].strip())
            i -= 1
        if not comment and "#: " in line:
            comment = [line.split("#: ", 1)[1].strip()]
        if comment:
            attr.docstring = Docstring(
                _code_spans("\n".join(comment)), lineno=i + 2, endlineno=attr.lineno - 1, parent=attr
            )

    def on_package(self, *, pkg: Module, loader, **kwargs) -> None:
        for mod in _modules(pkg):
            if not mod.exports:
                continue
            missing = [str(name) for name in mod.exports if str(name) not in mod.members]
            if not missing:
                continue
            runtime = importlib.import_module(mod.path)
            for name in missing:
                target = _target(getattr(runtime, name), name, pkg.path, exclude=mod.path)
                if target:
                    mod.set_member(name, Alias(name, target, parent=mod))


def _modules(mod: Module):
    yield mod
    for sub in mod.modules.values():
        if not sub.is_alias:
            yield from _modules(sub)


def _target(value, name: str, root: str, exclude: str) -> str | None:
    """Where ``value`` (resolved at run time) is documented: its defining module for a module, class or
    function, else the most public module of the package, other than ``exclude`` (the one that resolves it
    lazily), that holds it under ``name``."""
    if inspect.ismodule(value):
        return value.__name__
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and module.split(".")[0] == root:
        return f"{module}.{qualname}"
    holders = [
        m
        for m, obj in list(sys.modules.items())
        if m.split(".")[0] == root and m != exclude and getattr(obj, "__dict__", {}).get(name) is value
    ]
    if not holders:
        return None
    best = min(holders, key=lambda m: (sum(p.startswith("_") for p in m.split(".")), m.count("."), m))
    return f"{best}.{name}"
