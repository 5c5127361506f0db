"""Files at the boundary: netCDF reads with one clear ``InputError`` per failure (file closed), and the
clean-up of temporaries that a killed writer left behind."""

from __future__ import annotations

import os
from pathlib import Path

import h5netcdf  # noqa: F401  (the netCDF engine of every read and write: engine="h5netcdf")
import h5py  # noqa: F401  (h5netcdf's HDF5 backend; h5netcdf >= 1.7 no longer installs it)

from ._errors import InputError


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
        pid = tmp.name[len(p.name) + 2:-len(".tmp")]
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
