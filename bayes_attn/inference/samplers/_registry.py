"""The sampler registry: every sampling algorithm the runner knows, by ``[sampler] kind``.

A record (:class:`~bayes_attn.inference.samplers.Sampler`) says which model kinds a sampler serves, what
statistics it reports and what inputs it needs; the configuration's ``KINDS`` and ``SAMPLER_MODELS`` and the
driver's choices are derived from it.  Records are cheap: a sampler's module (and NumPyro or blackjax behind
it) is imported when a run first builds its program.  Adding a sampler is one module with
``program(model, settings)`` and one :func:`register` line (README, "How to add a sampler").
"""

from __future__ import annotations

from ._base import Sampler

#: what is sampled (:mod:`bayes_attn.inference.models`)
MODELS = ("weights", "collapsed", "order_parameters")

#: every sampler, by name (:func:`register` adds one)
REGISTRY: dict[str, Sampler] = {}


def register(sampler: Sampler) -> Sampler:
    """Add ``sampler`` to :data:`REGISTRY` (a name already there is replaced); returns it."""
    REGISTRY[sampler.name] = sampler
    return sampler


_HERE = __name__.rsplit(".", 1)[0]
register(Sampler("nuts", f"{_HERE}.nuts:program",
                 ("lp", "acceptance_rate", "step_size", "diverging", "n_steps", "tree_depth", "energy"), MODELS))
register(Sampler("mala", f"{_HERE}.mala:program", ("lp", "acceptance_rate", "step_size", "diverging", "n_steps"),
                 MODELS))
register(Sampler("ula", f"{_HERE}.ula:program", ("lp", "acceptance_rate", "step_size", "diverging", "n_steps"),
                 MODELS))
# Gibbs needs conditionally Gaussian blocks: the full weights (on "collapsed" it runs the full-weight sweep and
# stores the collapsed model's predictions)
register(Sampler("gibbs", f"{_HERE}.gibbs:program", ("lp", "acceptance_rate", "diverging", "n_steps"),
                 ("weights", "collapsed"), path_inputs=True))

__all__ = ["MODELS", "REGISTRY", "register"]
