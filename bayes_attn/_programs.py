"""Traced programs kept on disk (:mod:`jax.export`), so that a fresh process skips tracing and lowering.

JAX's persistent compilation cache (:mod:`bayes_attn._cache`) saves XLA's compilation, but a process must
still trace a Python function and lower it to StableHLO before it can look the compiled program up.  For the
theory solver's Newton step that is about 1 s of tracing and 0.3 s of lowering in every ``bayes-attn theory``
run, against 0.2 s to load the compiled program (docs/design.md, "Start-up").  :func:`disk_jit` is
:func:`jax.jit` plus a second cache: the first call with new argument shapes exports the traced program
(:func:`jax.export.export`) and writes it next to the compilation cache; a later process deserialises it
and calls it (``Exported.call``), whose compiled form the persistent cache then holds.

Key *(project choice)*: the function's module and name, the argument tree (static structure included, e.g.
a spec's head counts), every leaf's shape, dtype and weak type, the backend, JAX's version, x64, and a hash of
every source file of this package, so any edit to the package invalidates every entry (stale programs are
never loaded; a development checkout simply exports again).  Files: ``<cache_dir>/exported/<key>.bin``,
written atomically and pruned with the cache (:func:`bayes_attn._cache.enable_compilation_cache`); an
unreadable or corrupt file is deleted and the program exported again.  Anything this cache cannot serve --
tracer arguments (a call inside another transformation), tree structure whose text shows object identities,
outputs JAX cannot serialise, a missing ``flatbuffers`` package, the cache turned off -- falls back to the plain
:func:`jax.jit` of the same function, with the same results.

One difference from :func:`jax.jit` *(measured)*: the outputs of a program read from disk are committed to the
default device (``Array.committed``), as those of any ``Exported.call`` are, so a later computation that mixes
them with arrays sharded over several devices fails where uncommitted outputs would have been moved.  Hence
only the theory's programs (solver steps, the predictor), whose results go to the host, use it; a function
whose outputs feed sharded chains (``network.phi``, the samplers' data) stays on :func:`jax.jit`.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import jax

from ._cache import EXPORTED, cache_dir


@functools.lru_cache(maxsize=1)
def package_fingerprint() -> str:
    """SHA-256 of every ``.py`` file of the installed package (paths and contents): one edit changes it."""
    root = Path(__file__).parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def program_dir() -> Path | None:
    """The folder of exported programs, or ``None`` when the cache is off (``BAYES_ATTN_CACHE_DIR=off``)."""
    base = cache_dir()
    return None if base is None else base / EXPORTED


def _key(fn, treedef, avals) -> str | None:
    tree = str(treedef)
    if " at 0x" in tree:  # an object identity in the static structure: not stable across processes
        return None
    text = "|".join(
        [
            f"{fn.__module__}.{fn.__qualname__}",
            tree,
            ";".join(f"{a.shape}:{a.dtype}:{int(a.weak_type)}" for a in avals),
            jax.default_backend(),
            jax.__version__,
            str(bool(jax.config.jax_enable_x64)),
            package_fingerprint(),
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _load_or_export(fn, treedef, leaves, path: Path):
    """A callable on the flat leaves: the program at ``path`` if it loads, else freshly exported (and written)."""
    import flatbuffers  # noqa: F401  (jax.export's serialisation format; ImportError: the plain jit serves)
    from jax import export

    if path.is_file():
        try:
            return jax.jit(export.deserialize(bytearray(path.read_bytes())).call)
        except Exception:  # noqa: BLE001 - a corrupt or foreign file: export again below
            path.unlink(missing_ok=True)
    flat = jax.jit(lambda *xs: fn(*jax.tree.unflatten(treedef, xs)))
    exported = export.export(flat)(*leaves)
    try:
        _write_atomically(path, bytes(exported.serialize()))
    except OSError:
        pass  # a read-only cache folder: this process still uses the program
    return jax.jit(exported.call)


def disk_jit(fn):
    """:func:`jax.jit` of ``fn`` whose traced program is also kept on disk (module docstring).

    ``fn`` takes positional pytree arguments (no static arguments) and returns a pytree of arrays.  The plain
    jitted function is the wrapper's ``jitted`` attribute.
    """
    jitted = jax.jit(fn)
    programs: dict = {}  # (treedef, avals) -> callable on the flat leaves, or None: use ``jitted``

    @functools.wraps(fn)
    def call(*args):
        leaves, treedef = jax.tree.flatten(args)
        if any(isinstance(x, jax.core.Tracer) for x in leaves):
            return jitted(*args)
        avals = tuple(jax.typeof(x) for x in leaves)
        memo = (treedef, avals)
        if memo not in programs:
            folder, key = program_dir(), _key(fn, treedef, avals)
            program = None
            if folder is not None and key is not None:
                try:
                    program = _load_or_export(fn, treedef, leaves, folder / f"{key}.bin")
                except Exception:  # noqa: BLE001 - not exportable (or no flatbuffers): the plain jit serves it
                    program = None
            programs[memo] = program
        program = programs[memo]
        return jitted(*args) if program is None else program(*leaves)

    call.jitted = jitted
    call._cache_size = lambda: len(programs) + jitted._cache_size()  # as jax.jit's: programs held by this process
    return call


__all__ = ["disk_jit", "package_fingerprint", "program_dir"]
