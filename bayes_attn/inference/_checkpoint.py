"""Checkpoint files of interrupted runs: what determines the draws, atomic writes, strict reads.

A checkpoint is a main file (``OUT.ckpt.npz``) and its parts (``OUT.ckpt.npz.part0``, ``.part1``, ...).  The main file
holds the sampler state of every chain (its pytree leaves, bit-exact), the position in the run, the package
version, a fingerprint of everything that determines the draws (sampler config, model, network spec, data), and
how many parts and stored draws there are.  Each part holds the draws and statistics stored (warm-up statistics
included) since the previous checkpoint, so a save writes what is new, not the whole run again *(project choice:
the one-file layout rewrote every draw at every chunk, quadratic in the run's length; 0.65 s per save of a
4 x 1000-draw run with ``f`` and ``f_var`` on 1000 test inputs, about 3.6 s over one such run's ten saves)*.
Every file is written to a temporary file in the same folder and renamed, the new part before the main file that
counts it, so a kill at any moment leaves a consistent checkpoint: the previous one (and at most one part it does
not count, which the next save overwrites) or the new one.  :func:`remove_checkpoint` deletes a checkpoint with its parts.

Reading is strict: a file that is not a checkpoint, a truncated or corrupt one (or a missing or short part), one
written by another package version or for another config or data set is an :class:`~bayes_attn.InputError` with
one line, and the files are left as they are.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import jax
import numpy as np

from .._errors import InputError
from .. import _io
from .._version import __version__
from ..config import settings_hash


def fingerprint(cfg, spec, model, arrays) -> str:
    """Hash of everything that determines the draws: the sampler settings (run options excluded, as in a sweep
    cell's hash: both are :func:`bayes_attn.config.settings_hash`), the network spec, the model and the data
    arrays."""
    return settings_hash(cfg, repr(spec), repr(model), *arrays)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`bayes_attn._io.atomic_write_bytes`)."""
    _io.atomic_write_bytes(path, data, field="checkpoint")


#: layout of the checkpoint files; a file of another format is refused with one line
FORMAT = 3


def part_path(path, k: int) -> Path:
    """The file of part ``k`` of the checkpoint at ``path``."""
    p = Path(path)
    return p.with_name(f"{p.name}.part{k}")


class Writer:
    """Saves the checkpoints of one run at ``path``: each :meth:`save` writes the draws stored since the last one as
    a new part, then the main file (module docstring).  ``parts`` and ``lengths`` (stored draws per array) continue
    a checkpoint that was read back (:func:`load`'s metadata)."""

    def __init__(self, path, parts: int = 0, lengths: dict | None = None):
        self.path, self.parts, self.lengths = Path(path), parts, dict(lengths or {})

    def save(self, meta: dict, carry, groups: dict) -> None:
        """Write a checkpoint; ``groups``: ``{group: {name: (chain, draw, ...) array}}`` (posterior, sample statistics,
        warm-up statistics and draws so far), which only ever grow along the draw axis."""
        flat = {f"{g}__{k}": v for g, d in groups.items() for k, v in d.items()}
        new = {k: np.asarray(v)[:, self.lengths.get(k, 0) :] for k, v in flat.items()}
        new = {k: v for k, v in new.items() if v.shape[1]}
        parts = self.parts
        if new:
            buf = io.BytesIO()
            np.savez(buf, **new)
            atomic_write_bytes(part_path(self.path, parts), buf.getvalue())
            parts += 1
        lengths = {k: int(np.shape(v)[1]) for k, v in flat.items()}
        leaves = jax.tree_util.tree_leaves(carry)
        arrays = {f"carry_{i}": np.asarray(x) for i, x in enumerate(leaves)}
        meta = {
            **meta,
            "package_version": __version__,
            "n_leaves": len(leaves),
            "format": FORMAT,
            "parts": parts,
            "lengths": lengths,
        }
        buf = io.BytesIO()
        np.savez(buf, meta=np.array(json.dumps(meta)), **arrays)
        atomic_write_bytes(self.path, buf.getvalue())
        self.parts, self.lengths = parts, lengths


def load(path, carry_like, fp: str, groups: tuple[str, ...]):
    """``(meta, carry, {group: {name: array}})`` of a checkpoint written for fingerprint ``fp`` (else
    :class:`InputError`); ``meta["parts"]`` and ``meta["lengths"]`` continue it (:class:`Writer`)."""
    p = Path(path)
    name = str(p)
    try:
        with np.load(p, allow_pickle=False) as f:
            files = set(f.files)
            if "meta" not in files:
                raise InputError(f"resume: {name!r} is not a bayes-attn checkpoint (no metadata)")
            meta = json.loads(str(f["meta"]))
            if meta.get("package_version") != __version__:
                raise InputError(
                    f"resume: checkpoint {name!r} was written by bayes_attn "
                    f"{meta.get('package_version')}, this is {__version__}; start the run afresh"
                )
            if meta.get("format") != FORMAT:
                raise InputError(f"resume: checkpoint {name!r} has an older layout; start the run afresh")
            if meta.get("fingerprint") != fp:
                raise InputError(f"resume: checkpoint {name!r} was written by a different config, network or data set")
            treedef = jax.tree_util.tree_structure(carry_like)
            if meta.get("n_leaves") != treedef.num_leaves:
                raise InputError(f"resume: checkpoint {name!r} does not match this sampler's state")
            leaves = [f[f"carry_{i}"] for i in range(treedef.num_leaves)]
            for got, want in zip(leaves, jax.tree_util.tree_leaves(carry_like)):
                if got.shape != want.shape:
                    raise InputError(f"resume: checkpoint {name!r} does not match this sampler's state")
            carry = jax.tree_util.tree_unflatten(treedef, leaves)
    except InputError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
        raise InputError(
            f"resume: cannot read checkpoint {name!r} ({type(exc).__name__}); it is truncated or "
            "corrupt: delete it to start afresh"
        ) from None
    stored: dict[str, list] = {}
    for k in range(meta["parts"]):
        part = part_path(p, k)
        try:
            with np.load(part, allow_pickle=False) as f:
                for key in f.files:
                    stored.setdefault(key, []).append(f[key])
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise InputError(
                f"resume: cannot read part {k} of checkpoint {name!r} ({part.name}: {type(exc).__name__}); it is "
                "missing, truncated or corrupt: delete the checkpoint to start afresh"
            ) from None
    flat = {k: np.concatenate(v, axis=1) for k, v in stored.items()}
    if {k: int(v.shape[1]) for k, v in flat.items()} != {k: n for k, n in meta["lengths"].items() if n}:
        raise InputError(f"resume: the parts of checkpoint {name!r} do not hold its draws; delete it to start afresh")
    arrays = {g: {k[len(g) + 2 :]: v for k, v in flat.items() if k.startswith(g + "__")} for g in groups}
    return meta, carry, arrays


def remove_checkpoint(path) -> None:
    """Delete the checkpoint at ``path``: its main file, its parts, and the temporary files that writes cut by a kill
    left behind (:func:`bayes_attn._io.remove_stale_temporaries`)."""
    p = Path(path)
    p.unlink(missing_ok=True)
    _io.remove_stale_temporaries(p)
    for part in p.parent.glob(f"{p.name}.part*"):
        if part.name[len(p.name) + len(".part") :].isdigit():
            part.unlink(missing_ok=True)
    for tmp in p.parent.glob(f".{p.name}.part*.tmp"):  # ".<name>.part<k>.<pid>.tmp"
        _io.remove_stale_temporaries(p.parent / tmp.name[1:].rsplit(".", 2)[0])


__all__ = ["fingerprint", "Writer", "load", "remove_checkpoint", "part_path", "atomic_write_bytes"]
