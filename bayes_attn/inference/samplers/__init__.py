"""Sampling algorithms on one protocol (:mod:`._base`): NUTS, MALA, ULA and exact Gibbs.

Each module has blackjax's shape (``State``/``Info``, ``init``, ``build_kernel``) plus
``program(model, settings)`` for the driver and a :class:`Sampler` record ``SAMPLER``.
NUTS is NumPyro's (functional ``hmc`` pieces), MALA and ULA use blackjax's kernels and dual
averaging; the exact Gibbs sweep is ours (docs/samplers.md).

How to add a sampler: write ``samplers/<name>.py`` with ``State``, ``Info``, ``init``,
``build_kernel``, ``program(model, settings) -> Program`` (per-chain pure functions taking the
model's traced arguments) and ``SAMPLER = Sampler(name, program, stats, models)``; add it to
:data:`SAMPLERS` and to ``KINDS``/``SAMPLER_MODELS`` of :mod:`bayes_attn.inference._config`.  The
driver then gives it chunking, checkpoint/resume, progress, thinning and the DataTree output.
"""

from . import gibbs, mala, nuts, ula
from ._base import STATS, Program, Sampler, Settings

#: every sampler, by ``[sampler] kind``
SAMPLERS = {s.name: s for s in (nuts.SAMPLER, mala.SAMPLER, ula.SAMPLER, gibbs.SAMPLER)}

__all__ = ["SAMPLERS", "STATS", "Program", "Sampler", "Settings", "nuts", "mala", "ula", "gibbs"]
