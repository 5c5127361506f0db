"""Checkpoint files of interrupted runs: what determines the draws, atomic writes, strict reads.

A checkpoint (``OUT.ckpt.npz``) holds the sampler state of every chain (its pytree leaves,
bit-exact), the draws and statistics stored so far (warm-up statistics included), the position in the run, the package version
and a fingerprint of everything that determines the draws (sampler config, model, network spec,
data).  It is written to a temporary file in the same folder and renamed, so a kill at any moment
leaves either the previous checkpoint or the new one, never half of one.

Reading is strict: a file that is not a checkpoint, a truncated or corrupt one, one written by
another package version or for another config or data set is an :class:`~bayes_attn.InputError`
with one line, and the file is left as it is.
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


#: layout of the checkpoint file; a file of another format is refused with one line
FORMAT = 2


def save(path, meta: dict, carry, groups: dict) -> None:
    """Write a checkpoint atomically (see module docstring); ``groups``: ``{group: {name: array}}``
    (posterior, sample statistics, warm-up statistics and draws so far)."""
    leaves = jax.tree_util.tree_leaves(carry)
    arrays = {f"carry_{i}": np.asarray(x) for i, x in enumerate(leaves)}
    for g, d in groups.items():
        arrays.update({f"{g}__{k}": v for k, v in d.items()})
    meta = {**meta, "package_version": __version__, "n_leaves": len(leaves), "format": FORMAT}
    buf = io.BytesIO()
    np.savez(buf, meta=np.array(json.dumps(meta)), **arrays)
    atomic_write_bytes(Path(path), buf.getvalue())


def load(path, carry_like, fp: str, groups: tuple[str, ...]):
    """``(meta, carry, {group: {name: array}})`` of a checkpoint written for fingerprint ``fp`` (else
    :class:`InputError`)."""
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
            arrays = {g: {k[len(g) + 2 :]: f[k] for k in files if k.startswith(g + "__")} for g in groups}
    except InputError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
        raise InputError(
            f"resume: cannot read checkpoint {name!r} ({type(exc).__name__}); it is truncated or "
            "corrupt: delete it to start afresh"
        ) from None
    return meta, carry, arrays


__all__ = ["fingerprint", "save", "load", "atomic_write_bytes"]
