"""Where the chains run: vectorized on one device, sharded over several, or one after another.

Chains are laid out over a one-axis device mesh (``"chain"``, :mod:`jax.sharding`): each device runs
``chains / devices`` of them vectorized (``vmap``) inside :func:`jax.shard_map`, with no communication
between devices (a device's NUTS trees wait only for its own chains).  This replaces ``jax.pmap``,
which JAX deprecated; ``chain_method = "parallel"`` in older configs maps onto it.

``numpyro.set_host_device_count`` only works before JAX has run anything; :func:`request_host_devices`
wraps it, and :func:`chain_layout` says plainly (a warning) when fewer devices are there than asked for.
"""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

from .._errors import InputError
from ..config import CHAIN_METHODS


def request_host_devices(n: int) -> None:
    """Ask XLA for ``n`` CPU devices.  Must run before the first JAX operation."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        import numpyro

        numpyro.set_host_device_count(max(int(n), 1))


def host_devices_needed(chains: int, requested: str = "auto", devices: int | None = None) -> int | None:
    """How many CPU devices a run must ask XLA for (:func:`request_host_devices`, before any JAX operation):
    ``devices`` when the user forces a layout, ``chains`` for ``chain_method = "parallel"``, and ``None`` (ask for
    nothing) otherwise: those chains run on one device (:func:`chain_layout`), and a process that asked for more
    would only key its compilation cache apart, since JAX's cache key includes the device topology (a process
    with four host devices reads none of the programs a one-device process wrote, theory programs included;
    docs/design.md)."""
    if devices is not None:
        return int(devices)
    if requested == "parallel" and chains > 1:
        return int(chains)
    return None


class ChainLayout(NamedTuple):
    """``method``: ``"vectorized"`` (``vmap`` within each device) or ``"sequential"`` (``lax.map``);
    ``devices``: how many devices the chains are sharded over (1: no sharding)."""

    method: str
    devices: int


def _largest_divisor(chains: int, limit: int) -> int:
    return max(d for d in range(1, min(chains, limit) + 1) if chains % d == 0)


def chain_layout(
    chains: int, requested: str = "auto", devices: int | None = None, cpu_method: str = "vectorized"
) -> ChainLayout:
    """How the runner maps ``chains`` chains (``[sampler] chain_method`` and ``devices``).

    * ``devices`` given: the chains are sharded over that many local devices (it must divide the
      chains and be at most the number present: :class:`~bayes_attn.InputError` naming
      ``sampler.devices`` otherwise);
    * ``"auto"`` *(project choice, measured; docs/design.md, "Chains on CPU")*: one device on CPU (on 2
      cores, chains spread over virtual host devices ran several times slower than on one), there
      ``cpu_method`` (the sampler's registry entry, ``Sampler.cpu_chains``: ``"sequential"`` for NUTS,
      ``"vectorized"`` for the others); on accelerators the largest number of devices that divides the chains;
    * ``"parallel"`` (older configs; was ``pmap``): sharded over the largest number of local devices
      that divides the chains, with a warning when that is a single device;
    * ``"vectorized"``: one device unless ``devices`` says otherwise; ``"sequential"``: one chain
      after another on one device.

    One chain always runs ``"sequential"`` (there is nothing to vectorize).
    """
    import jax

    present = jax.local_device_count()
    if devices is not None:
        if devices > present:
            raise InputError(
                f"sampler.devices: {devices} requested but JAX sees {present} device(s) "
                "(CPU: bayes_attn.inference.request_host_devices before any JAX operation)"
            )
        if chains % devices:
            raise InputError(f"sampler.devices: {devices} devices do not divide {chains} chains")
    if chains <= 1:
        return ChainLayout("sequential", 1)
    if requested == "sequential":
        return ChainLayout("sequential", 1)
    if devices is not None:
        return ChainLayout("vectorized", devices)
    if requested == "parallel":
        d = _largest_divisor(chains, present)
        if d == 1:
            warnings.warn(
                f'chain_method = "parallel": {chains} chains but {present} JAX device(s) that could '
                "share them evenly; running them vectorized on one device. Call "
                "bayes_attn.inference.request_host_devices(chains) before any JAX operation for host "
                "devices.",
                RuntimeWarning,
                stacklevel=2,
            )
        return ChainLayout("vectorized", d)
    if requested == "auto" and jax.default_backend() != "cpu":
        return ChainLayout("vectorized", _largest_divisor(chains, present))
    if requested == "auto":
        return ChainLayout(cpu_method, 1)
    return ChainLayout("vectorized", 1)


def run_layout(sampler: str, cfg) -> ChainLayout:
    """The layout a run of ``sampler`` with :class:`~bayes_attn.config.SamplerConfig` ``cfg`` uses:
    :func:`chain_layout` of its chains, ``chain_method`` and ``devices``, with the sampler's registry entry
    (``Sampler.cpu_chains``) for ``"auto"`` on CPU."""
    from ..config import REGISTRY

    return chain_layout(cfg.chains, cfg.chain_method, cfg.devices, REGISTRY[sampler].cpu_chains)


def chain_method(chains: int, requested: str = "auto", cpu_method: str = "vectorized") -> str:
    """The resolved method name: ``"parallel"`` (sharded over several devices), ``"vectorized"`` or
    ``"sequential"`` (:func:`chain_layout`)."""
    lay = chain_layout(chains, requested, cpu_method=cpu_method)
    return "parallel" if lay.devices > 1 else lay.method


def shard_chains(fn, layout: ChainLayout, n_batched: int, n_shared: int):
    """``fn`` (per chain) mapped over chains as ``layout`` says and jitted: the first ``n_batched``
    arguments carry a leading chain axis, the last ``n_shared`` are shared by every chain."""
    import jax
    import numpy as np
    from jax.sharding import Mesh, PartitionSpec

    axes = (0,) * n_batched + (None,) * n_shared
    if layout.method == "sequential":

        def seq(*a):
            batched, shared = a[:n_batched], a[n_batched:]
            return jax.lax.map(lambda b: fn(*b, *shared), batched)

        return jax.jit(seq)
    vec = jax.vmap(fn, in_axes=axes)
    if layout.devices == 1:
        return jax.jit(vec)
    mesh = Mesh(np.array(jax.local_devices()[: layout.devices]), ("chain",))
    specs = (PartitionSpec("chain"),) * n_batched + (PartitionSpec(),) * n_shared
    return jax.jit(
        jax.shard_map(vec, mesh=mesh, in_specs=specs, out_specs=PartitionSpec("chain"), check_vma=False)
    )  # no collectives: every chain is independent


__all__ = [
    "request_host_devices",
    "host_devices_needed",
    "chain_layout",
    "run_layout",
    "chain_method",
    "shard_chains",
    "ChainLayout",
    "CHAIN_METHODS",
]
