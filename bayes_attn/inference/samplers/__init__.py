"""Sampling algorithms on one protocol (:mod:`._base`): NUTS, MALA, ULA, exact Gibbs and
replica-exchange NUTS (tempering).

Each module has blackjax's shape (``State``/``Info``, ``init``, ``build_kernel``) plus
``program(model, settings)`` for the driver; the registry (:data:`bayes_attn.config.REGISTRY`) lists them with
what they serve.  NUTS is NumPyro's (functional ``hmc`` pieces), MALA and ULA use blackjax's kernels and dual
averaging; the exact Gibbs sweep is ours (docs/samplers.md).  The algorithm modules are imported on first
use (PEP 562), so the registry can be read without loading NumPyro or blackjax.

How to add a sampler: README, "How to add a sampler".
"""

import importlib

from ...config import MODELS, REGISTRY, Sampler, register
from ._base import STATS, Program, Settings

#: every sampler, by ``[sampler] kind`` (the registry itself)
SAMPLERS = REGISTRY

_MODULES = ("nuts", "mala", "ula", "gibbs", "tempering")


def __getattr__(name):
    if name in _MODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "SAMPLERS",
    "REGISTRY",
    "MODELS",
    "register",
    "STATS",
    "Program",
    "Sampler",
    "Settings",
    "nuts",
    "mala",
    "ula",
    "gibbs",
    "tempering",
]
