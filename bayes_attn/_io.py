"""Reading netCDF files at the boundary: one clear ``InputError`` per failure, file closed."""

from __future__ import annotations

from pathlib import Path

import h5netcdf  # noqa: F401  (the netCDF engine of every read and write: engine="h5netcdf")
import h5py  # noqa: F401  (h5netcdf's HDF5 backend; h5netcdf >= 1.7 no longer installs it)

from ._errors import InputError


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
