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


#: accepted values of ``SamplerConfig.chain_method``
CHAIN_METHODS = ("auto", "vectorized", "parallel", "sequential")


def chain_method(chains: int, requested: str = "auto") -> str:
    """How NumPyro runs several chains.

    ``requested = "auto"`` *(project choice, measured)*: ``"parallel"`` (``pmap`` over devices)
    on accelerators with at least ``chains`` devices, else ``"vectorized"`` (``vmap``; on CPU always,
    and on one GPU, where all chains then share the device).  On
    2 CPU cores, 4 chains of collapsed NUTS ran several times faster vectorized than ``pmap``-ed
    over 4 host devices in a development measurement (not stored; docs/design.md, "Chains on CPU").  ``"parallel"`` without enough devices falls back to
    ``"sequential"`` with a warning (never silently).
    """
    import jax

    if chains <= 1:
        return "sequential"
    if requested == "auto":
        if jax.default_backend() != "cpu" and jax.local_device_count() >= chains:
            return "parallel"
        return "vectorized"
    if requested == "parallel":
        return _parallel_or_sequential(chains)
    return requested


def _parallel_or_sequential(chains: int) -> str:
    import jax

    if jax.local_device_count() >= chains:
        return "parallel"
    warnings.warn(
        f"{chains} chains but only {jax.local_device_count()} JAX device(s): running chains sequentially. "
        "Call bayes_attn.inference.request_host_devices(chains) before any JAX operation to run them in parallel.",
        RuntimeWarning,
        stacklevel=3,
    )
    return "sequential"
