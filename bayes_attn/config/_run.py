"""TOML run configuration: ``[data]``, ``[network]``, ``[model]``, ``[sampler]``, ``[diagnostics]``.

```toml
[data]
file = "bundle.npz"        # x_train (P,S,N0), y_train (P,), x_test (Q,S,N0), y_test (Q,) + attention
# or: task = "markov", P = 100, n_test = 1000, paths = 4, seed_train = 27, seed_test = 59,
#     head_seeds = [147, 247], beta_att = 10.0, noise = [1.0, 1.0, 1.0],
#     heads = [["good", "rand"], ["unif", "rand"]]   # optional: heads by name
[network]
width = 100                # or a list (theory scans); or widths = [N_1, ..., N_L, N_a]
readout = "last"           # last | first | mean
temperature = 0.01         # or a list (theory scans)
variances = [1.0, 1.0, 1.0, 1.0]   # input, layer 1..L, readout
[model]
kind = "weights"          # weights | collapsed | order_parameters
[sampler]
kind = "nuts"             # nuts | mala | ula | gibbs  ("wishart" = nuts on order_parameters)
chains = 4
warmup = 500
draws = 500             # default: 1000 on model order_parameters, 500 otherwise
seed = 0
```

Unknown keys are errors (they are usually typos).  Relative file paths are resolved
against the config file's folder.  Other commands may read their own tables
(``[theory]``, ...) from :attr:`RunConfig.raw`.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import ConfigWarning, require
from .._io import read_matrix, read_toml
from ..network import NetworkSpec
from ..tasks import Task
from ._registry import REGISTRY
from ._sampler import ATTENTION_OPTIONS, SamplerConfig
from ._tables import DataTable, NetworkTable, unknown_keys
from ._thresholds import Thresholds

#: tables other commands own; validated by them
EXTRA_TABLES = {"theory", "report", "potts", "experiment", "sweep"}


@dataclass(frozen=True)
class RunConfig:
    """A parsed, validated run configuration."""

    data: DataTable
    network: NetworkTable
    sampler: SamplerConfig
    diagnostics: Thresholds
    raw: dict = field(repr=False)
    base_dir: Path = Path(".")
    text: str = ""

    def task(self) -> Task:
        """The data set of ``[data]`` (bundle read or task generated)."""
        return self.data.load(self.base_dir)

    @property
    def widths(self) -> list:
        """The networks' widths (a list: one entry unless the config scans widths)."""
        return list(self.network.widths)

    @property
    def temperatures(self) -> list:
        """The temperatures (a list: one entry unless the config scans temperatures)."""
        return list(self.network.temperatures)

    def base_spec(self, task: Task) -> NetworkSpec:
        """The network of ``task`` at the first width and temperature (heads, variances, readout)."""
        n = self.network
        return NetworkSpec(
            heads=task.heads,
            n0=task.n0,
            width=n.widths[0],
            temperature=n.temperatures[0],
            variances=n.variances,
            readout=n.readout,
        )

    def basis(self):
        """The ``[model] basis`` matrix (read from its ``.npy`` file, relative to the config's folder) or ``None``."""
        path = self.sampler.basis
        return None if path is None else read_matrix(self.base_dir / path, field="model.basis")

    def spec(self, task: Task) -> NetworkSpec:
        """The single spec of a non-scan config (errors on width/temperature lists)."""
        require(len(self.widths) == 1, "network.width", "takes one width here (lists are for `bayes-attn theory`)")
        require(
            len(self.temperatures) == 1,
            "network.temperature",
            "takes one temperature here (lists are for `bayes-attn theory`)",
        )
        return self.base_spec(task)


def sampler_config(raw: dict) -> SamplerConfig:
    """The :class:`SamplerConfig` of a config's ``[model]`` and ``[sampler]`` tables (``[model] kind`` is
    ``SamplerConfig.model``; every other field is a key of ``[sampler]``, derived from the dataclass)."""
    sampler_tab = dict(raw.get("sampler", {}))
    model_keys = {*ATTENTION_OPTIONS, "path_space"}
    unknown_keys(sampler_tab, set(SamplerConfig.__dataclass_fields__) - {"model", *model_keys}, "sampler")
    model_tab = dict(raw.get("model", {}))
    unknown_keys(model_tab, {"kind", *model_keys}, "model")
    if "kind" in model_tab:
        sampler_tab["model"] = model_tab.pop("kind")
    sampler_tab.update(model_tab)
    cfg = SamplerConfig(**sampler_tab)
    _warn_unused_options(sampler_tab, cfg.kind)
    return cfg


def _warn_unused_options(table: dict, kind: str) -> None:
    """A :class:`~bayes_attn.ConfigWarning` for each key of ``[sampler]`` that is another sampler's kernel option
    (``Sampler.options`` in the registry): it would be silently ignored."""
    used = REGISTRY[kind].options
    others = {o for s in REGISTRY.values() for o in s.options} - set(used)
    for key in sorted(set(table) & others):
        warnings.warn(
            f"sampler.{key}: not an option of the {kind} sampler (its options: {', '.join(used) or 'none'}); ignored",
            ConfigWarning,
            stacklevel=3,
        )


def parse_config(raw: dict, base_dir=Path("."), text: str = "") -> RunConfig:
    """Validate a config dict (as read from TOML)."""
    unknown_keys(raw, {"data", "network", "model", "sampler", "diagnostics"} | EXTRA_TABLES, "config")
    require("data" in raw, "data", "missing table [data]")
    require("network" in raw, "network", "missing table [network]")
    data, net = DataTable.from_table(raw["data"]), NetworkTable.from_table(raw["network"])
    sampler = sampler_config(raw)
    diag = dict(raw.get("diagnostics", {}))
    unknown_keys(diag, set(Thresholds.__dataclass_fields__), "diagnostics")  # every gate is a key
    cfg = RunConfig(data, net, sampler, Thresholds(**diag), raw, Path(base_dir), text)
    # validate the network table now (widths, temperatures, variances, readout) with a dummy shape
    for w, T in itertools.product(cfg.widths, cfg.temperatures):
        NetworkSpec(
            heads=(1,) * (len(w) - 1 if isinstance(w, list) else 1), n0=1, width=w, temperature=T, readout=net.readout
        )
    return cfg


def load_config(path) -> RunConfig:
    """Read and validate a TOML run config."""
    p = Path(path)
    raw, text = read_toml(p)
    return parse_config(raw, p.parent, text)
