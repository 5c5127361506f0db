"""Parallel chains over host devices.

``numpyro.set_host_device_count`` only works before JAX has run anything; after that,
NumPyro silently falls back to sequential chains.  We make the fallback explicit.
"""

from __future__ import annotations

import os
import warnings


def request_host_devices(n: int) -> None:
    """Ask XLA for ``n`` CPU devices.  Must run before the first JAX operation."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        import numpyro

        numpyro.set_host_device_count(max(int(n), 1))


def chain_method(chains: int) -> str:
    """``"parallel"`` when enough devices exist, else ``"sequential"`` with a warning."""
    import jax

    if chains <= 1:
        return "sequential"
    if jax.local_device_count() >= chains:
        return "parallel"
    warnings.warn(
        f"{chains} chains but only {jax.local_device_count()} JAX device(s): running chains sequentially. "
        "Call bayes_attn.inference.request_host_devices(chains) before any JAX operation to run them in parallel.",
        RuntimeWarning,
        stacklevel=3,
    )
    return "sequential"
