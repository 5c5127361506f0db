"""Configuration: what a run is (sampler and model settings, network and data tables, diagnostic gates), the
TOML reader and the one hash of a run's identity.

It sits below :mod:`bayes_attn.inference` (above :mod:`bayes_attn.theory`): commands that only read a config
(``bayes-attn theory``, ``diagnose``) import no sampler, and the sampler registry is readable without loading
NumPyro or blackjax.  :mod:`bayes_attn.inference` re-exports every name for the users of earlier versions.
"""

from ._registry import MODELS, REGISTRY, Sampler, register
from ._run import RunConfig, load_config, parse_config, sampler_config
from ._sampler import (
    ATTENTION_MODELS,
    ATTENTION_OPTIONS,
    CHAIN_METHODS,
    LIMITS,
    FIELD_ROLES,
    INITS,
    KINDS,
    LAYOUT_FIELDS,
    PRECISIONS,
    RUN_OPTIONS,
    SAMPLER_ONLY_FIELDS,
    SAMPLER_MODELS,
    SamplerConfig,
    check_attention_options,
    hashed_settings,
    settings_hash,
)
from ._tables import DataTable, NetworkTable
from ._thresholds import Thresholds

__all__ = [
    "SamplerConfig",
    "RunConfig",
    "DataTable",
    "NetworkTable",
    "Thresholds",
    "load_config",
    "parse_config",
    "sampler_config",
    "settings_hash",
    "hashed_settings",
    "FIELD_ROLES",
    "RUN_OPTIONS",
    "SAMPLER_ONLY_FIELDS",
    "LAYOUT_FIELDS",
    "KINDS",
    "MODELS",
    "SAMPLER_MODELS",
    "INITS",
    "PRECISIONS",
    "CHAIN_METHODS",
    "ATTENTION_MODELS",
    "ATTENTION_OPTIONS",
    "LIMITS",
    "check_attention_options",
    "REGISTRY",
    "Sampler",
    "register",
]
