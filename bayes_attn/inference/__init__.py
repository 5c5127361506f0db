"""Inference: what is sampled (:mod:`.models`), how (:mod:`.samplers`), and the driver that runs,
checkpoints, resumes and writes every combination (:func:`sample` -> ArviZ DataTree).
"""

from ._checkpoint import fingerprint
from ._config import INITS, KINDS, MODELS, SAMPLER_MODELS, SamplerConfig
from ._devices import chain_method, request_host_devices
from ._driver import sample
from ._output import package_versions, predictor_statistics, read_run, to_datatree, write_netcdf, write_run
from ._run_config import RunConfig, load_config, parse_config
from ._runner import SamplingInterrupted, run_chains
from ._zero_variance import posterior_scores, zero_variance_mean, zero_variance_statistics
from .models import (
    CollapsedModel,
    Model,
    ModelArgs,
    OrderParameterModel,
    WeightsModel,
    build_model,
    theory_start,
    weight_shapes,
    weights_from_latent,
)
from .samplers import SAMPLERS, STATS, Program, Sampler, Settings

__all__ = [
    "SamplerConfig",
    "RunConfig",
    "load_config",
    "parse_config",
    "KINDS",
    "MODELS",
    "SAMPLER_MODELS",
    "INITS",
    "sample",
    "SAMPLERS",
    "STATS",
    "Sampler",
    "Program",
    "Settings",
    "run_chains",
    "SamplingInterrupted",
    "fingerprint",
    "Model",
    "ModelArgs",
    "WeightsModel",
    "CollapsedModel",
    "OrderParameterModel",
    "build_model",
    "theory_start",
    "weight_shapes",
    "weights_from_latent",
    "request_host_devices",
    "chain_method",
    "to_datatree",
    "write_run",
    "write_netcdf",
    "read_run",
    "predictor_statistics",
    "package_versions",
    "posterior_scores",
    "zero_variance_mean",
    "zero_variance_statistics",
]
