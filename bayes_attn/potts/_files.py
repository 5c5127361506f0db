"""Atomic output files: write a temporary file in the target folder, then ``os.replace`` it."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np


def _atomic(path, write) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)          # mkstemp creates 0600; give the file the usual permissions
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_savez(path, **arrays) -> Path:
    """``np.savez`` to ``path`` atomically (the name is kept as given, ``.npz`` included)."""
    return _atomic(path, lambda fh: np.savez(fh, **arrays))


def atomic_write_json(path, obj, **kw) -> Path:
    """JSON (indent 1, numpy scalars as floats) written atomically."""
    text = json.dumps(obj, indent=1, default=_default, **kw)
    return _atomic(path, lambda fh: fh.write(text.encode()))


def atomic_write_bytes(path, data: bytes) -> Path:
    return _atomic(path, lambda fh: fh.write(data))


def _default(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.bool_,)):
        return bool(x)
    return float(x)


__all__ = ["atomic_savez", "atomic_write_json", "atomic_write_bytes"]
