"""Traced programs kept on disk (:mod:`jax.export`), so that a fresh process skips tracing and lowering.

JAX's persistent compilation cache (:mod:`bayes_attn._cache`) saves XLA's compilation, but a process must
still trace a Python function and lower it to StableHLO before it can look the compiled program up.  For the
theory solver's Newton step that is about 1 s of tracing and 0.3 s of lowering in every ``bayes-attn theory``
run, against 0.2 s to load the compiled program (docs/design.md, "Start-up").  :func:`disk_jit` is
:func:`jax.jit` plus a second cache: the first call with new argument shapes exports the traced program
(:func:`jax.export.export`) and writes it next to the compilation cache; a later process deserialises it
and calls it (``Exported.call``), whose compiled form the persistent cache then holds.

Key *(project choice)*: the function's module and name, the caller's extra text (``disk_jit(fn, key)``: for the
samplers, the sampler, model, settings, layout and the versions of NumPyro and BlackJAX), the argument tree
(static structure included, e.g. a spec's head counts), every leaf's shape, dtype and weak type, the backend,
JAX's version, x64, and a hash of every source file of this package, so any edit to the package invalidates every
entry (stale programs are never loaded; a development checkout simply exports again).  Files:
``<cache_dir>/exported/<key>.bin``, written atomically and pruned with the cache
(:func:`bayes_attn._cache.enable_compilation_cache`); an unreadable or corrupt file is deleted and the program
exported again.  Anything this cache cannot serve -- tracer arguments (a call inside another transformation), tree
structure whose text shows object identities, outputs JAX cannot serialise, a missing ``flatbuffers`` package, the
cache turned off -- falls back to the plain :func:`jax.jit` of the same function, with the same results.

The outputs of ``Exported.call`` are committed to the default device (``Array.committed``); a program read from
disk returns them uncommitted, as :func:`jax.jit` does (:func:`_uncommitted`), so that the jitted functions and
the operations they feed compile once, not once per commitment.  The users are the theory's programs (solver
steps, the predictor), whose results go to the host, and the samplers' chunk programs when the chains run on
one device (:func:`bayes_attn.inference._runner.compiled`, which adds the sampler, model, settings and layout to
the key); a function whose outputs feed sharded chains (``network.phi``, the samplers' data, chains over several
devices) stays on :func:`jax.jit`, since a program read from disk runs on one device.
"""

from __future__ import annotations

import functools
import hashlib
import os
import weakref
from pathlib import Path

import jax

from ._cache import EXPORTED, add_release_hook, cache_dir


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


def _key(fn, treedef, avals, extra: str = "") -> str | None:
    tree = str(treedef)
    if " at 0x" in tree or " at 0x" in extra:  # an object identity: not stable across processes
        return None
    text = "|".join(
        [
            f"{fn.__module__}.{fn.__qualname__}",
            extra,
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


def _load_or_export(fn, treedef, leaves, path: Path, compiler_options=None):
    """A callable on the flat leaves: the program at ``path`` if it loads, else freshly exported (and written).

    The file holds the serialised program of ``fn`` on flat leaves with flat outputs and, pickled beside it, the
    outputs' tree structure (:func:`jax.export` serialises only trees of registered types and string-keyed
    dicts; a pickled tree has no such limit, and the file is as trusted as the compilation cache beside it).
    """
    import pickle

    import flatbuffers  # noqa: F401  (jax.export's serialisation format; ImportError: the plain jit serves)
    from jax import export

    if path.is_file():
        try:
            stored = pickle.loads(path.read_bytes())
            return _Caller(export.deserialize(bytearray(stored["program"])), stored["out_tree"], compiler_options)
        except Exception:  # noqa: BLE001 - a corrupt, foreign or older file: export again below
            path.unlink(missing_ok=True)
    trees = {}

    def flat(*xs):
        out, trees["out"] = jax.tree.flatten(fn(*jax.tree.unflatten(treedef, xs)))
        return out

    program = bytes(export.export(jax.jit(flat))(*leaves).serialize())
    out_tree = trees["out"]
    try:
        _write_atomically(path, pickle.dumps({"program": program, "out_tree": out_tree}))
    except OSError:
        pass  # a read-only cache folder: this process still uses the program
    # the program as every later process reads it (the module it compiles is then the same, and so is the key
    # under which the persistent cache holds its compilation)
    return _Caller(export.deserialize(bytearray(program)), out_tree, compiler_options)


class _Caller:
    """Call an exported program on flat leaves, returning the output tree.  Its inputs are placed on the default
    device by the jit's own ``in_shardings``, so that a program fed host arrays (a checkpoint's), committed and
    uncommitted device arrays keeps one compiled form instead of one per commitment, with no
    :func:`jax.device_put` of its own on every call (*measured*: a :func:`disk_jit` call of a small program took
    33 us instead of 78 us, the plain jit's 9 us; a theory solve that runs to its iteration limit calls its
    Newton step thousands of times).
    :meth:`compile_ahead` compiles it for given argument types before the first call."""

    def __init__(self, exported, out_tree, compiler_options=None):
        self.device = jax.devices()[0]
        sharding = _one_device(self.device)
        self.jitted = jax.jit(exported.call, in_shardings=sharding, compiler_options=compiler_options)
        self.exported = exported
        self.out_tree = out_tree
        self.ahead = None  # the compiled program, once compile_ahead ran
        _CALLERS.add(self)

    def output_like(self):
        out = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in self.exported.out_avals]
        return jax.tree.unflatten(self.out_tree, out)

    def compile_ahead(self, avals) -> None:
        sharding = _one_device(self.device)
        like = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type, sharding=sharding) for a in avals]
        self.ahead = self.jitted.lower(*like).compile()

    def __call__(self, *xs):
        if self.ahead is None:
            out = self.jitted(*xs)
        else:  # a compiled program takes arrays already on its device
            out = self.ahead(*jax.device_put(xs, self.device))
        return jax.tree.unflatten(self.out_tree, [_uncommitted(x) for x in out])


def _uncommitted(x):
    """``x`` (an output of ``Exported.call``, committed to its device) as the uncommitted array that :func:`jax.jit`
    returns for uncommitted inputs: the same buffer, no copy.

    *(measured)* A jitted function compiles once per commitment of its arguments: fed a committed output of a
    program read from disk where it was first fed host arrays (``fit_attention``'s feature map after the first
    Adam step, the operations run one at a time on a solver's outputs), it compiled the same program a second
    time.  JAX has no public way to drop the commitment, so this rebuilds the array with its private
    constructor; where that fails (another JAX version) the committed array is returned, which only costs
    those compilations again (``tests/test_programs.py`` notices)."""
    if _ArrayImpl is None:
        return x
    try:
        return _ArrayImpl(x.aval, x.sharding, x._arrays, committed=False)
    except Exception:  # noqa: BLE001 - a JAX whose constructor differs: committed outputs still compute the same
        return x


try:  # imported once, not on every call of a program (_uncommitted)
    from jax._src.array import ArrayImpl as _ArrayImpl
except ImportError:  # another JAX: outputs stay committed
    _ArrayImpl = None


def _one_device(device):
    """The sharding that places a whole array on ``device``: :func:`jax.sharding.make_single_device_sharding` where
    JAX has it (it deprecated the ``SingleDeviceSharding`` constructor, and the warning reached users' terminals),
    else that constructor (older JAX)."""
    make = getattr(jax.sharding, "make_single_device_sharding", None)
    return make(device) if make is not None else jax.sharding.SingleDeviceSharding(device)


#: every program object of this process, so that a release of compiled programs reaches those compiled ahead
_CALLERS: weakref.WeakSet = weakref.WeakSet()


def _drop_compiled_ahead() -> None:
    """Drop the programs compiled ahead (their memory maps, :func:`bayes_attn._cache.release_compiled_programs`);
    a later call compiles (or reads from the persistent cache) again."""
    for caller in list(_CALLERS):
        caller.ahead = None


add_release_hook(_drop_compiled_ahead)


def _aval(x):
    """JAX's abstract value of a leaf: an array's or a Python scalar's type, or a :class:`jax.ShapeDtypeStruct`'s."""
    if isinstance(x, jax.ShapeDtypeStruct):
        return jax.core.ShapedArray(x.shape, x.dtype, weak_type=x.weak_type)
    return jax.typeof(x)


def options_jit(fn, compiler_options: dict | None = None):
    """:func:`jax.jit` of ``fn`` compiled with XLA's ``compiler_options`` when called at top level; inside another
    transformation (tracer arguments, e.g. :func:`jax.eval_shape`), where JAX refuses options on a nested jit,
    the plain :func:`jax.jit` (the options only change how XLA compiles the top-level program)."""
    if not compiler_options:
        return jax.jit(fn)
    top, nested = jax.jit(fn, compiler_options=compiler_options), jax.jit(fn)

    @functools.wraps(fn)
    def call(*args):
        traced = any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(args))
        return (nested if traced else top)(*args)

    call._cache_size = lambda: top._cache_size() + nested._cache_size()
    return call


def disk_jit(fn, key: str = "", compiler_options: dict | None = None):
    """:func:`jax.jit` of ``fn`` whose traced program is also kept on disk (module docstring).

    ``fn`` takes positional pytree arguments (no static arguments) and returns a pytree of arrays.  ``key``: what
    else decides the program besides ``fn``'s name and the arguments' structure and types, as stable text (the
    samplers' chunk programs share one function name across samplers, models and settings); text with an object
    identity in it (`` at 0x``) keeps the program off disk.  ``compiler_options``: XLA's options for compiling
    it (:func:`jax.jit`'s; they are part of the persistent cache's key, not of the file's, since the traced
    program is the same).  The plain jitted function is the wrapper's ``jitted`` attribute.
    """
    jitted = options_jit(fn, compiler_options)
    programs: dict = {}  # (treedef, avals) -> _Caller on the flat leaves, or None: use ``jitted``

    def lookup(leaves, treedef):
        avals = tuple(_aval(x) for x in leaves)
        memo = (treedef, avals)
        if memo not in programs:
            folder, name = program_dir(), _key(fn, treedef, avals, key)
            program = None
            if folder is not None and name is not None:
                try:
                    program = _load_or_export(fn, treedef, leaves, folder / f"{name}.bin", compiler_options)
                except Exception:  # noqa: BLE001 - not exportable (or no flatbuffers): the plain jit serves it
                    program = None
            programs[memo] = program
        return programs[memo], avals

    @functools.wraps(fn)
    def call(*args):
        leaves, treedef = jax.tree.flatten(args)
        if any(isinstance(x, jax.core.Tracer) for x in leaves):
            return jitted(*args)
        program, _ = lookup(leaves, treedef)
        return jitted(*args) if program is None else program(*leaves)

    def prepare(*args):
        """Trace (or read from disk) the program for these arguments (arrays, scalars or
        :class:`jax.ShapeDtypeStruct` leaves) without compiling it; returns its outputs' types as a tree of
        :class:`jax.ShapeDtypeStruct`, or ``None`` where the disk cannot serve it (the first call then traces)."""
        program, _ = lookup(*jax.tree.flatten(args))
        return None if program is None else program.output_like()

    def compile_ahead(*args) -> bool:
        """Compile the program for these arguments (as :func:`prepare` takes them) now, so that a later call with
        arguments of the same types runs without compiling; returns whether it could (a program the disk cannot
        serve is left to its first call)."""
        program, avals = lookup(*jax.tree.flatten(args))
        if program is not None and program.ahead is None:
            program.compile_ahead(avals)
        return program is not None

    call.jitted = jitted
    call.prepare = prepare
    call.compile_ahead = compile_ahead
    call._cache_size = lambda: len(programs) + jitted._cache_size()  # as jax.jit's: programs held by this process
    return call


__all__ = ["disk_jit", "options_jit", "package_fingerprint", "program_dir"]
