"""Inference: NumPyro models, samplers and the shared sampling driver."""

from ._config import KINDS, SamplerConfig
from ._devices import chain_method, request_host_devices
from ._driver import BUILDERS, RUNNERS, sample
from ._models import (
    BuiltModel,
    ModelData,
    build,
    collapsed_model,
    full_model,
    weight_shapes,
    weights_from_latent,
)
from ._chunked import Program, SamplingInterrupted, run_program
from ._gibbs import run_gibbs
from ._mala import run_mala
from ._nuts import run_nuts
from ._ula import run_ula
from ._output import package_versions, predictor_statistics, read_run, to_datatree, write_run
from ._wishart import WishartLayout, build_wishart
from ._zero_variance import posterior_scores, zero_variance_mean, zero_variance_statistics

__all__ = [
    "build_wishart",
    "WishartLayout",
    "posterior_scores",
    "zero_variance_mean",
    "zero_variance_statistics",
    "SamplerConfig",
    "KINDS",
    "sample",
    "RUNNERS",
    "BUILDERS",
    "run_nuts",
    "run_mala",
    "run_ula",
    "run_gibbs",
    "run_program",
    "Program",
    "SamplingInterrupted",
    "build",
    "BuiltModel",
    "ModelData",
    "full_model",
    "collapsed_model",
    "weight_shapes",
    "weights_from_latent",
    "request_host_devices",
    "chain_method",
    "to_datatree",
    "write_run",
    "read_run",
    "predictor_statistics",
    "package_versions",
]
