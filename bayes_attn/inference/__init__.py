"""Inference: what is sampled (:mod:`.models`), how (:mod:`.samplers`), and the driver that runs,
checkpoints, resumes and writes every combination (:func:`sample` -> ArviZ DataTree).

The configuration types (:class:`SamplerConfig`, :class:`RunConfig`, :func:`load_config`, ...) live in
:mod:`bayes_attn.config`, one layer below; they are re-exported here.
"""

import importlib

#: where each public name lives; a submodule is imported on first use of one of its names (PEP 562), so a
#: command that needs the config reader does not pay for NumPyro, ArviZ and Matplotlib (``python -X importtime``)
_WHERE = {
    "._checkpoint": ("fingerprint", "remove_checkpoint"),
    "..config": (
        "INITS",
        "KINDS",
        "LAYOUT_FIELDS",
        "MODELS",
        "PRECISIONS",
        "SAMPLER_MODELS",
        "SamplerConfig",
        "RunConfig",
        "load_config",
        "parse_config",
    ),
    "._devices": (
        "ChainLayout",
        "chain_layout",
        "run_layout",
        "chain_method",
        "host_devices_needed",
        "request_host_devices",
    ),
    "._driver": ("sample",),
    "._output": ("package_versions", "predictor_statistics", "read_run", "to_datatree", "write_netcdf", "write_run"),
    "._runner": ("SamplingInterrupted", "run_chains"),
    "._zero_variance": ("posterior_scores", "zero_variance_mean", "zero_variance_statistics"),
    ".models": (
        "CollapsedModel",
        "Model",
        "ModelArgs",
        "OrderParameterModel",
        "WeightsModel",
        "build_model",
        "theory_start",
        "weight_shapes",
        "weights_from_latent",
    ),
    ".samplers": ("SAMPLERS", "STATS", "Program", "Sampler", "Settings"),
}
_MODULE_OF = {name: mod for mod, names in _WHERE.items() for name in names}


def __getattr__(name):
    if name in _MODULE_OF:
        value = getattr(importlib.import_module(_MODULE_OF[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_MODULE_OF))


__all__ = [
    "SamplerConfig",
    "RunConfig",
    "load_config",
    "parse_config",
    "KINDS",
    "MODELS",
    "SAMPLER_MODELS",
    "INITS",
    "PRECISIONS",
    "LAYOUT_FIELDS",
    "sample",
    "SAMPLERS",
    "STATS",
    "Sampler",
    "Program",
    "Settings",
    "run_chains",
    "SamplingInterrupted",
    "fingerprint",
    "remove_checkpoint",
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
    "host_devices_needed",
    "chain_method",
    "chain_layout",
    "run_layout",
    "ChainLayout",
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
