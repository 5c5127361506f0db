"""Files at the boundary: every atomic write of the package (temporary file + ``os.replace``), netCDF
reads with one clear ``InputError`` per failure (file closed), and the clean-up of temporaries that a
killed writer left behind."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tomllib
from pathlib import Path

import h5netcdf  # noqa: F401  (the netCDF engine of every read and write: engine="h5netcdf")
import h5py  # noqa: F401  (h5netcdf's HDF5 backend; h5netcdf >= 1.7 no longer installs it)

import numpy as np

from ._errors import InputError


@contextlib.contextmanager
def without_dask():
    """Keep xarray from importing dask (and distributed) while this process has not imported it.

    With dask installed, xarray imports ``dask.array`` the first time it builds a variable (to recognise dask
    arrays) and asks dask's scheduler before every netCDF write (to decide whether to close the file between
    chunked writes), which imports ``distributed``: about 0.5 s of a ``bayes-attn theory`` run that uses
    neither.  While ``dask`` is not in :data:`sys.modules` no dask array or scheduler can exist in this process,
    so inside this context xarray is told what it finds when dask is not installed ("no dask arrays", "no
    scheduler"); on leaving, its own look-ups are restored.  With dask already imported (sweeps) this does
    nothing.  Not thread-safe: for a command's main thread (the CLI) and the writers it calls."""
    try:
        from xarray.backends import locks, writers
        from xarray.namedarray import pycompat, utils
    except ImportError:  # another xarray layout: let it look dask up itself
        yield
        return
    stand_ins = [  # (module, name, what xarray gets without dask)
        (writers, "get_dask_scheduler", lambda *args, **kwargs: None),
        (locks, "get_dask_scheduler", lambda *args, **kwargs: None),
        (utils, "is_dask_collection", lambda x: False),
    ]
    if "dask" in sys.modules or not all(hasattr(m, name) for m, name, _ in stand_ins):
        yield
        return
    seeded = "dask" not in pycompat._cached_duck_array_modules
    if seeded:
        absent = object.__new__(pycompat.DuckArrayModule)
        absent.module, absent.version, absent.type, absent.available = None, pycompat.Version("0.0.0"), (), False
        pycompat._cached_duck_array_modules["dask"] = absent
    originals = [(m, name, getattr(m, name)) for m, name, _ in stand_ins]
    for m, name, stand_in in stand_ins:
        setattr(m, name, stand_in)
    try:
        yield
    finally:
        for m, name, original in originals:
            setattr(m, name, original)
        if seeded:
            pycompat._cached_duck_array_modules.pop("dask", None)


def temporary_path(path) -> Path:
    """``.<name>.<pid>.tmp`` next to ``path``: where this process writes before ``os.replace``."""
    p = Path(path)
    return p.with_name(f".{p.name}.{os.getpid()}.tmp")


def remove_stale_temporaries(path) -> list[Path]:
    """Remove the ``.<name>.<pid>.tmp`` files of ``path`` whose writer process is gone (a SIGKILL in the
    middle of an atomic write leaves one behind); returns them.  A live writer's file is left alone."""
    p = Path(path)
    removed = []
    for tmp in p.parent.glob(f".{p.name}.*.tmp"):
        pid = tmp.name[len(p.name) + 2 : -len(".tmp")]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # the writer is alive
        except ProcessLookupError:
            pass
        except PermissionError:
            continue  # alive, another user's
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    return removed


def atomic_write(path, write, *, field: str = "out") -> Path:
    """Write ``path`` atomically: ``write(tmp)`` fills :func:`temporary_path` ``(path)``, which is
    flushed to disk and renamed onto ``path``, so a kill leaves either the old file or the new one.
    An unwritable folder or a full disk is an :class:`InputError` naming ``field``; the temporary
    file is removed on any failure, and those of killed writers are removed first."""
    p = Path(path)
    tmp = temporary_path(p)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(p)
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except OSError as exc:
        _discard(tmp)
        raise InputError(f"{field}: cannot write {str(p)!r} ({exc.strerror or type(exc).__name__})", field) from None
    except BaseException:
        _discard(tmp)
        raise
    return p


def _discard(tmp: Path) -> None:
    try:
        tmp.unlink(missing_ok=True)
    except OSError:  # the folder itself is missing or not a folder: nothing was written
        pass


def atomic_write_bytes(path, data: bytes, *, field: str = "out") -> Path:
    """``data`` to ``path`` (:func:`atomic_write`)."""
    return atomic_write(path, lambda tmp: tmp.write_bytes(data), field=field)


def atomic_savez(path, *, field: str = "out", **arrays) -> Path:
    """``np.savez`` to ``path`` (:func:`atomic_write`); the name is kept as given, ``.npz`` included."""

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    return atomic_write(path, write, field=field)


def atomic_write_json(path, obj, *, field: str = "out", **kw) -> Path:
    """JSON (indent 1; numpy arrays as lists, numpy scalars as Python numbers) to ``path``
    (:func:`atomic_write`)."""
    text = json.dumps(obj, indent=1, default=_json_default, **kw)
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), field=field)


def _json_default(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return float(x)


def load_netcdf(path, field: str, open_fn):
    """``open_fn(path, engine="h5netcdf")`` loaded into memory (file closed).

    Raises :class:`InputError` naming ``field`` and the file when it is missing or not netCDF.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{field}: cannot read {str(p)!r} (no such file)")
    try:
        with open_fn(p, engine="h5netcdf") as obj:
            return obj.load()
    except Exception as exc:
        raise InputError(f"{field}: cannot read {str(p)!r} as netCDF ({type(exc).__name__})") from None


def read_toml(path, *, field: str = "config") -> tuple[dict, str]:
    """``(tables, text)`` of the TOML file ``path``: the one reader of every config file.

    A missing, unreadable or invalid file is an :class:`~bayes_attn.InputError` naming ``field``.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{field}: cannot read {str(p)!r} (no such file)")
    try:
        text = p.read_text()
        return tomllib.loads(text), text
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{field}: cannot read {str(p)!r} ({type(exc).__name__})") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{field}: {str(p)!r} is not valid TOML ({exc})") from None


def read_matrix(path, *, field: str) -> np.ndarray:
    """A finite 2-D real array saved with ``numpy.save`` (``.npy``), as float64; one line naming ``field`` when
    the file is missing, unreadable, an ``.npz`` archive or not such an array."""
    try:
        B = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"{field}: cannot read {str(path)!r} as a .npy array ({e})") from None
    if not isinstance(B, np.ndarray):  # an .npz archive
        B.close()
        raise InputError(f"{field}: {str(path)!r} is an .npz archive; give one array saved with numpy.save (.npy)")
    if (
        B.ndim != 2
        or not (np.issubdtype(B.dtype, np.integer) or np.issubdtype(B.dtype, np.floating))
        or not np.all(np.isfinite(B))
    ):
        raise InputError(f"{field}: must be a finite 2-D real array, got shape {B.shape} and dtype {B.dtype}")
    return B.astype(float)
