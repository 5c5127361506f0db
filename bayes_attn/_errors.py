"""Input validation shared by every boundary (configs, arrays, files).

Every check raises :class:`InputError` (a ``ValueError``) whose message is one line
that names the offending field.  The CLI turns it into ``error: <message>`` and exit
code 2; the Python API lets it propagate.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterable

import numpy as np


class InputError(ValueError):
    """Bad user input. The message names the field and fits on one line; ``field`` is that name when the
    error came from :func:`require` (or a check built on it)."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class ConfigWarning(UserWarning):
    """A setting that has no effect (e.g. an option of another sampler).  Its message is one line that names
    the field; the command line prints it as ``warning: <message>``."""


def require(cond: bool, field: str, msg: str) -> None:
    if not cond:
        raise InputError(f"{field}: {msg}", field)


@contextlib.contextmanager
def renamed(names: dict[str, str]):
    """Inside, an :class:`InputError` about a field in ``names`` is raised again under its new name: the command
    line calls the library, which names its own parameters (``steps``), and maps them onto its flags
    (``--steps``) instead of checking the same values twice."""
    try:
        yield
    except InputError as exc:
        if exc.field not in names:
            raise
        new = names[exc.field]
        raise InputError(new + str(exc)[len(exc.field) :], new) from None


def positive(value: Any, field: str, *, integer: bool = False) -> Any:
    """Return ``value`` if it is a finite positive number (an int when ``integer``)."""
    if integer:
        ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
        require(ok, field, f"must be a positive integer, got {value!r}")
    else:
        ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
        require(ok, field, f"must be a number, got {value!r}")
        require(bool(np.isfinite(value)), field, f"must be finite, got {value!r}")
    require(value > 0, field, f"must be > 0, got {value!r}")
    return value


def nonnegative_int(value: Any, field: str) -> int:
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    require(ok and value >= 0, field, f"must be a non-negative integer, got {value!r}")
    return int(value)


def one_of(value: Any, choices: Iterable[str], field: str) -> str:
    choices = tuple(choices)
    require(value in choices, field, f"unknown value {value!r}; expected one of {', '.join(map(repr, choices))}")
    return value


def array(
    value: Any, field: str, *, ndim: int | None = None, shape: tuple | None = None, dtype_kind: str = "fiub"
) -> np.ndarray:
    """Validate a numeric array: dtype kind, rank, shape (``None`` entries free), all finite."""
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - numpy rarely fails here
        raise InputError(f"{field}: cannot be read as an array ({exc})") from None
    require(arr.dtype.kind in dtype_kind, field, f"must be numeric, got dtype {arr.dtype}")
    if ndim is not None:
        require(arr.ndim == ndim, field, f"must have {ndim} dimensions, got shape {arr.shape}")
    if shape is not None:
        ok = arr.ndim == len(shape) and all(s is None or s == a for s, a in zip(shape, arr.shape))
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        require(ok, field, f"must have shape {want}, got {arr.shape}")
    if arr.dtype.kind == "f" or arr.dtype.kind == "c":
        require(bool(np.all(np.isfinite(arr))), field, "contains NaN or inf")
    return arr
