"""Atomic output files of the Potts part: re-exported from the package's one home for them,
:mod:`bayes_attn._io` (temporary file in the target folder, then ``os.replace``)."""

from __future__ import annotations

from .._io import atomic_savez, atomic_write_bytes, atomic_write_json

__all__ = ["atomic_savez", "atomic_write_json", "atomic_write_bytes"]
