"""The sampler registry: every sampling algorithm the runner knows, by ``[sampler] kind``.

A record (:class:`Sampler`) says which model kinds a sampler serves, what
statistics it reports and what inputs it needs; the configuration's ``KINDS`` and ``SAMPLER_MODELS`` and the
driver's choices are derived from it.  Records are cheap: a sampler's module (and NumPyro or blackjax behind
it) is imported when a run first builds its program.  Adding a sampler is one module with
``program(model, settings)`` and one :func:`register` line (README, "How to add a sampler").
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Sampler:
    """One sampling algorithm, as the registry (:data:`REGISTRY`) lists it: the only place that says what a
    sampler serves and needs.

    ``build``: ``program(model, settings) -> Program``, or where to find it, ``"package.module:function"``
    (imported when a run first needs it, so that reading configs never loads a kernel); ``stats``: the
    :data:`~bayes_attn.inference.samplers.STATS` names it reports; ``models``: the model kinds it can
    sample; ``path_inputs``: its programs need the path inputs in the model's arguments (the exact Gibbs
    sweep); ``options``: the :class:`~bayes_attn.config.SamplerConfig` kernel options its program reads (in the
    spirit of NumPyro's ``NUTS(...)`` against ``MCMC(...)``: the other fields are the run's); a config that sets
    another sampler's option gets a :class:`~bayes_attn.ConfigWarning` naming it; ``cpu_chains``: how
    ``chain_method = "auto"`` runs several chains on a CPU (:func:`bayes_attn.inference.chain_layout`):
    ``"vectorized"`` (one ``vmap``ped program) or ``"sequential"`` (one chain after another), the faster of the
    two for this algorithm there.
    """

    name: str
    build: Callable | str
    stats: tuple[str, ...]
    models: tuple[str, ...]
    path_inputs: bool = False
    options: tuple[str, ...] = ()
    cpu_chains: str = "vectorized"

    def program(self, model, settings):
        """The sampler's :class:`~bayes_attn.inference.samplers.Program` for ``model`` and
        :class:`~bayes_attn.inference.samplers.Settings` (imports its module on first use)."""
        build = self.build
        if isinstance(build, str):
            module, _, name = build.partition(":")
            build = getattr(importlib.import_module(module), name)
        return build(model, settings)


#: what is sampled (:mod:`bayes_attn.inference.models`; the names live here so that
#: configurations can be checked without importing a model)
MODELS = ("weights", "collapsed", "order_parameters", "attention", "attention_weights")

#: every sampler, by name (:func:`register` adds one)
REGISTRY: dict[str, Sampler] = {}


def register(sampler: Sampler) -> Sampler:
    """Add ``sampler`` to :data:`REGISTRY` (a name already there is replaced); returns it."""
    REGISTRY[sampler.name] = sampler
    return sampler


_HERE = "bayes_attn.inference.samplers"
register(
    Sampler(
        "nuts",
        f"{_HERE}.nuts:program",
        ("lp", "acceptance_rate", "step_size", "diverging", "n_steps", "tree_depth", "energy"),
        MODELS,
        options=("target_accept", "max_tree_depth", "dense_mass"),
        # vectorized NUTS chains run every iteration as long as the longest of their trees, and vmapped trees
        # compile slower: one after another was faster cold and warm on CPU (docs/design.md, "Chains on CPU")
        cpu_chains="sequential",
    )
)
register(
    Sampler(
        "mala",
        f"{_HERE}.mala:program",
        ("lp", "acceptance_rate", "step_size", "diverging", "n_steps"),
        MODELS,
        options=("target_accept", "step_size"),
    )
)
# ULA's warm-up starts at step_size; its sampling step is ula_step_factor / lambda_max
register(
    Sampler(
        "ula",
        f"{_HERE}.ula:program",
        ("lp", "acceptance_rate", "step_size", "diverging", "n_steps"),
        MODELS,
        options=("step_size", "ula_step_factor"),
    )
)
# Gibbs needs conditionally Gaussian blocks: the full weights (on "collapsed" it runs the full-weight sweep and
# stores the collapsed model's predictions)
register(
    Sampler(
        "gibbs",
        f"{_HERE}.gibbs:program",
        ("lp", "acceptance_rate", "diverging", "n_steps"),
        ("weights", "collapsed"),
        path_inputs=True,
    )
)

# tempering needs the likelihood apart from the prior: the models that can drop their data (model.data = False)
register(
    Sampler(
        "tempering",
        f"{_HERE}.tempering:program",
        (
            "lp",
            "acceptance_rate",
            "step_size",
            "diverging",
            "n_steps",
            "tree_depth",
            "energy",
            "swap_rate",
            "pair_swap_rate",
            "round_trips",
            "ladder",
        ),
        ("order_parameters", "attention"),
        options=("target_accept", "max_tree_depth", "dense_mass", "replicas", "beta_min"),
        cpu_chains="sequential",
    )
)

__all__ = ["MODELS", "REGISTRY", "Sampler", "register"]
