"""How much memory a job may take, and the refusal of one that would not fit (before anything is allocated).

*(project choice)* The budget is the memory the operating system reports as available now (Linux
``MemAvailable``; elsewhere the free physical pages), not the total: a laptop running other work has less.
Estimates are of the arrays a job holds at its peak, rounded up; a job whose estimate exceeds the budget is
refused with one line naming the field that sets its size (``InputError``: exit 2 at the command line).
"""

from __future__ import annotations

import os

from ._errors import InputError


def available_bytes() -> int | None:
    """Memory available to a new allocation now, in bytes (``None`` where the system does not say)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def require_memory(need: float, field: str, what: str) -> None:
    """:class:`InputError` naming ``field`` when ``need`` bytes (the estimate of ``what``) exceed what is available."""
    have = available_bytes()
    if have is not None and need > have:
        raise InputError(f"{field}: {what} needs about {need / 1e9:.1f} GB of memory, {have / 1e9:.1f} GB is available")


__all__ = ["available_bytes", "require_memory"]
