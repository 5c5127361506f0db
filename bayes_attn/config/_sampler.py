"""Sampler configuration (the ``[model]`` and ``[sampler]`` tables of a run config) and the one hash of
what determines a run's draws.

Every field of :class:`SamplerConfig` is classified in :data:`FIELD_ROLES`: ``"draws"`` (it changes
what is sampled or the draws themselves: hashed) or ``"run"`` (how and where the run is carried out:
progress, checkpoint interval, chain layout; never hashed).  :func:`settings_hash` is the only hash of a
run's settings: the checkpoint fingerprint (:func:`bayes_attn.inference.fingerprint`) and the sweep cell
hash (:func:`bayes_attn.sweep.cell_hash`) are both made by it, so they cannot disagree on what a run option
is.  A new field must be classified (tests/test_config.py checks every field).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass, fields
from typing import Literal

import numpy as np

from .._errors import nonnegative_int, one_of, positive, require
from ..linalg import MODES as PATH_SPACE_MODES
from ._registry import MODELS, REGISTRY

#: the built-in sampling algorithms, derived from the registry (:data:`bayes_attn.config.REGISTRY`,
#: which validation reads, so a registered sampler is accepted too); ``"wishart"`` is accepted as an alias
#: of ``kind = "nuts"`` on ``model = "order_parameters"``
KINDS = tuple(REGISTRY)
#: the models each built-in sampler can sample (the registry's ``models``)
SAMPLER_MODELS = {name: s.models for name, s in REGISTRY.items()}

#: target acceptance when ``target_accept`` is not given: NUTS (NumPyro default) and MALA
#: (0.574, Roberts & Rosenthal 1998, optimal scaling of MALA)
DEFAULT_TARGET_ACCEPT = {"mala": 0.574}

#: accepted values of ``SamplerConfig.chain_method`` (:func:`bayes_attn.inference.chain_layout`)
CHAIN_METHODS = ("auto", "vectorized", "parallel", "sequential")

#: floating-point precision of a run's arrays and programs
PRECISIONS = ("float64", "float32")
#: settings that only say where the chains run (a subset of the run options, :data:`RUN_OPTIONS`)
LAYOUT_FIELDS = ("chain_method", "devices")

#: where chains start: the sampler's default (NUTS: NumPyro's ``init_to_uniform``; MALA/ULA/Gibbs:
#: a standard-normal draw of the sites), (order_parameters only) the theory's saddle point, or (attention only,
#: its default) independent draws from the prior
INITS = ("uniform", "theory", "prior")

#: the models that sample the attention (docs/attention.md); their ``[model]`` options are :data:`ATTENTION_OPTIONS`
ATTENTION_MODELS = ("attention", "attention_weights")
#: the ``[model]`` options of the sampled-attention models (``[model] kind`` is :attr:`SamplerConfig.model`)
ATTENTION_OPTIONS = ("rank", "basis", "attention_scale", "limit")
#: ``limit``: finite width (the order parameters sampled with the attention) or the GP limit
LIMITS = ("finite", "gp")


#: the value of every attention option when it is not given (the defaults of :class:`SamplerConfig` and of
#: ``build_model``; the only value the other models accept)
_UNSET = {"rank": None, "basis": None, "attention_scale": None, "limit": "finite"}


def check_attention_options(model: str, *, rank=None, basis=None, attention_scale=None, limit: str = "finite") -> None:
    """Check the options of the sampled-attention models (:data:`ATTENTION_OPTIONS`) for ``[model] kind = model``
    before any data are read: an :class:`~bayes_attn._errors.InputError` of one line naming the field
    (``model.rank``, ...) otherwise.  The one check of these options: a config's ``[model]`` table
    (:class:`SamplerConfig`) and keyword callers of :func:`bayes_attn.inference.models.build_model` both call it.

    On the other models every option is unset (``limit`` at ``"finite"``).  On ``"attention"`` and
    ``"attention_weights"``: ``rank`` a positive integer (required), ``attention_scale`` positive when given,
    ``limit`` one of :data:`LIMITS`, and ``"attention_weights"`` at ``limit = "finite"`` only (it samples a finite
    network).  ``basis`` is checked where its form is known: a config holds the path of an ``.npy`` file,
    ``build_model`` an ``(n0, m)`` array, which it checks against the data.
    """
    given = {"rank": rank, "basis": basis, "attention_scale": attention_scale, "limit": limit}
    if model not in ATTENTION_MODELS:
        for name in ATTENTION_OPTIONS:
            unset = given[name] is None if _UNSET[name] is None else given[name] == _UNSET[name]
            require(
                unset,
                f"model.{name}",
                f'is an option of model kind = "attention" or "attention_weights", not {model!r}',
            )
        return
    require(
        rank is not None,
        "model.rank",
        f'is required with kind = "{model}" (the rank of every head\'s queries and keys)',
    )
    positive(rank, "model.rank", integer=True)
    if attention_scale is not None:
        positive(attention_scale, "model.attention_scale")
    one_of(limit, LIMITS, "model.limit")
    require(
        model != "attention_weights" or limit == "finite",
        "model.limit",
        'kind = "attention_weights" samples a finite network (limit = "finite")',
    )


def _deprecated(old: str, model: str) -> None:
    """Warn (:class:`FutureWarning`, shown to users) that ``old`` spells ``model`` the way of earlier versions."""
    warnings.warn(
        f'{old} is deprecated; use model="{model}" (in TOML: [model] kind = "{model}")', FutureWarning, stacklevel=4
    )


@dataclass(frozen=True)
class SamplerConfig:
    """What to sample (``model``) and how (``kind`` and its settings).

    ``model``: ``"weights"`` (every weight), ``"collapsed"`` (``V^(0)`` integrated out,
    docs/theory.md §5.1) or ``"order_parameters"`` (the exact finite-width posterior of the order
    parameters, §5.2).  Deprecated aliases (they still work, with a :class:`FutureWarning`): ``kind =
    "wishart"`` means ``kind = "nuts"`` on ``model = "order_parameters"``; ``collapsed = true`` means
    ``model = "collapsed"``.
    After construction ``kind``, ``model`` and ``collapsed`` are always the normalised values.

    ``warmup`` and ``draws`` are per chain; ``thinning`` keeps every k-th draw (``draws`` is the
    number of iterations after warm-up; ``draws // thinning`` are stored, and the first
    ``draws % thinning`` iterations after warm-up are discarded, as NumPyro does).  ``draws``
    defaults to 1000 on the order parameters and 500 otherwise *(project choice, measured)*: the
    gates of ``bayes-attn diagnose`` take the max R-hat over every test prediction and ``U`` entry
    (~1000 quantities on the Markov task), and with 4 x 500 draws that maximum crossed 1.01
    (1.0100-1.0125) in 11 of 32 default Markov runs whose chains agreed to within Monte Carlo
    error (no divergence, bulk ESS >= 1146); doubling the draws halves R-hat's noise, at a cost of
    about a minute per run on this model (docs/samplers.md, "Gates of the default runs").

    Options (docs/samplers.md):

    * ``target_accept``: NUTS 0.8 and MALA 0.574 when not given (``None``).
    * ``step_size``: initial MALA step size; ``None`` = ``1 / lambda_max`` of the potential's
      Hessian at the initial point (power iteration).
    * ``ula_step_factor``: ULA step-size rule ``h = ula_step_factor / lambda_max`` with
      ``lambda_max`` the largest Hessian eigenvalue of the potential at the end of warm-up.
    * ``dense_mass`` (NUTS): adapt a dense mass matrix; ``None`` = true for the order parameters
      (14-150 correlated dimensions, docs/wishart.md), false for the weight-space models (their
      dimension grows like N^2).
    * ``replicas``, ``beta_min`` (``kind = "tempering"``): the number of tempered copies of every chain and the
      smallest inverse temperature of the likelihood on their ladder (which starts geometric from 1 to
      ``beta_min`` and is moved to equal swap rejection halfway through warm-up; docs/samplers.md, "Tempering").
      Defaults 8 and 0.01 *(project choice)*: enough for a posterior whose likelihood holds a few tens of nats
      over the prior; a run reports ``swap_rate``, and a rate near 0 asks for more replicas.
    * ``chain_method``: ``"auto"`` (on one device on CPU, one chain after another for NUTS and vectorized for
      the other samplers; sharded over the devices on accelerators), ``"vectorized"``, ``"parallel"``
      (sharded over the local devices) or ``"sequential"``; ``devices``: shard the chains over this many devices (``None``: as
      ``chain_method`` says; it must divide ``chains``).  See :func:`bayes_attn.inference.chain_layout`.
      Neither changes the draws beyond floating-point reassociation, so neither enters a checkpoint's
      fingerprint or a sweep cell's hash.
    * ``precision``: ``"float64"`` (default) or ``"float32"``: the run casts its arrays and traces its
      programs with 32-bit floats (accelerators are much faster in float32); the draws and stored
      quantities are float32.  JAX's x64 mode stays on for everything else.
    * ``rank``, ``basis``, ``attention_scale``, ``limit`` (``model = "attention"`` or ``"attention_weights"``
      only; TOML: keys of
      ``[model]``): the rank of every head's queries and keys (required), an ``.npy`` file with an ``(n0, m)``
      basis of the token directions the attention reads (relative to the config's folder), the prior s.d. of
      their entries in basis coordinates (``None``: scores of s.d. about 1, docs/attention.md) and
      ``"finite"`` (default) or ``"gp"``.
    * ``init``: ``"uniform"`` (each sampler's default start; the default except on ``attention``),
      ``"prior"`` (``attention``, its default: independent prior draws) or ``"theory"`` (order parameters
      only): every chain starts at the saddle point ``U*`` of docs/theory.md §4.4 plus an
      independent ``U(-1, 1)`` jitter per site, and NUTS uses the Laplace metric ``(-H)^-1`` at
      ``U*`` as a fixed mass matrix (docs/wishart.md).
    * ``path_space`` (TOML: a key of ``[model]``): ``"auto"`` (default), ``"dense"`` or ``"path"``: whether the
      order-parameter and collapsed models see the training set as its path-space points (docs/theory.md
      §4.10; ``"auto"``: when they are fewer than the inputs).  The same numbers either way (to rounding), so it
      enters no settings hash (a checkpoint still resumes only on its own route: the data arrays it
      fingerprints are the route's).
    * ``save_warmup``: also store the derived quantities of the warm-up draws (ArviZ's ``warmup_posterior``,
      as ``save_warmup`` does in NumPyro and PyMC); the warm-up statistics (``warmup_sample_stats``) are
      always stored.
    * ``checkpoint_every``: stored draws per chunk (``x thinning`` iterations; warm-up chunks have
      as many iterations): the granularity of checkpoints and of the progress bar.
    """

    kind: str = "nuts"  # a registered sampler's name: "nuts" | "mala" | "ula" | "gibbs" built in
    model: Literal["weights", "collapsed", "order_parameters", "attention", "attention_weights"] | None = None
    collapsed: bool = False
    chains: int = 4
    warmup: int = 500
    draws: int | None = None
    thinning: int = 1
    seed: int = 0
    store_weights: bool = False
    progress_bar: bool = True
    target_accept: float | None = None
    max_tree_depth: int = 10
    dense_mass: bool | None = None
    step_size: float | None = None
    ula_step_factor: float = 0.1
    checkpoint_every: int = 100
    chain_method: Literal["auto", "vectorized", "parallel", "sequential"] = "auto"
    init: Literal["uniform", "theory", "prior"] | None = None
    devices: int | None = None
    precision: Literal["float64", "float32"] = "float64"
    save_warmup: bool = False
    rank: int | None = None
    basis: str | None = None
    attention_scale: float | None = None
    limit: Literal["finite", "gp"] = "finite"
    replicas: int = 8
    beta_min: float = 0.01
    path_space: Literal["auto", "dense", "path"] = "auto"

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        require(isinstance(self.collapsed, bool), "sampler.collapsed", f"must be true or false, got {self.collapsed!r}")
        if self.kind == "wishart":  # alias
            _deprecated('sampler.kind = "wishart"', "order_parameters")
            require(
                self.model in (None, "order_parameters"),
                "model.kind",
                f'sampler.kind = "wishart" samples the order parameters, not model {self.model!r}',
            )
            set_("kind", "nuts")
            set_("model", "order_parameters")
        one_of(self.kind, tuple(REGISTRY) + ("wishart",), "sampler.kind")
        if self.model is None:
            if self.collapsed:
                _deprecated("sampler.collapsed = true", "collapsed")
            set_("model", "collapsed" if self.collapsed else "weights")
        one_of(self.model, MODELS, "model.kind")
        require(
            not (self.collapsed and self.model == "weights"),
            "sampler.collapsed",
            'collapsed = true contradicts model.kind = "weights"',
        )
        set_("collapsed", self.model == "collapsed")
        serves = REGISTRY[self.kind].models
        require(
            self.model in serves,
            "model.kind",
            f"the {self.kind} sampler cannot sample model {self.model!r} (it samples {', '.join(serves)})",
        )
        one_of(self.chain_method, CHAIN_METHODS, "sampler.chain_method")
        one_of(self.precision, PRECISIONS, "sampler.precision")
        one_of(self.path_space, PATH_SPACE_MODES, "model.path_space")
        check_attention_options(
            self.model, rank=self.rank, basis=self.basis, attention_scale=self.attention_scale, limit=self.limit
        )
        require(
            self.basis is None or isinstance(self.basis, str),
            "model.basis",
            f"must be the path of an .npy file, got {self.basis!r}",
        )
        if self.init is None:
            set_("init", "prior" if self.model in ATTENTION_MODELS else "uniform")
        one_of(self.init, INITS, "sampler.init")
        require(
            self.init != "theory" or self.model == "order_parameters",
            "sampler.init",
            f"'theory' starts the order-parameter model, not model {self.model!r}",
        )
        require(
            self.init != "prior" or self.model in ATTENTION_MODELS,
            "sampler.init",
            f"'prior' starts the attention model, not model {self.model!r}",
        )
        if self.dense_mass is None:
            set_("dense_mass", self.model == "order_parameters")
        if self.draws is None:
            set_("draws", 1000 if self.model == "order_parameters" else 500)
        for name in ("store_weights", "progress_bar", "dense_mass", "save_warmup"):
            require(
                isinstance(getattr(self, name), bool),
                f"sampler.{name}",
                f"must be true or false, got {getattr(self, name)!r}",
            )
        positive(self.chains, "sampler.chains", integer=True)
        if self.devices is not None:
            positive(self.devices, "sampler.devices", integer=True)
            require(
                self.chains % self.devices == 0,
                "sampler.devices",
                f"{self.devices} devices do not divide {self.chains} chains",
            )
            require(
                self.chain_method != "sequential" or self.devices == 1,
                "sampler.devices",
                'chain_method = "sequential" runs on one device',
            )
        nonnegative_int(self.warmup, "sampler.warmup")
        positive(self.draws, "sampler.draws", integer=True)
        positive(self.thinning, "sampler.thinning", integer=True)
        require(
            self.draws // self.thinning >= 1,
            "sampler.thinning",
            f"thinning {self.thinning} keeps no draw out of {self.draws}",
        )
        nonnegative_int(self.seed, "sampler.seed")
        require(
            not (self.model == "order_parameters" and self.store_weights),
            "sampler.store_weights",
            "the order-parameter model has no weights; set it to false",
        )
        if self.target_accept is None:
            set_("target_accept", DEFAULT_TARGET_ACCEPT.get(self.kind, 0.8))
        positive(self.target_accept, "sampler.target_accept")
        require(self.target_accept < 1, "sampler.target_accept", f"must be < 1, got {self.target_accept}")
        positive(self.max_tree_depth, "sampler.max_tree_depth", integer=True)
        if self.step_size is not None:
            positive(self.step_size, "sampler.step_size")
        positive(self.ula_step_factor, "sampler.ula_step_factor")
        require(
            self.ula_step_factor < 2,
            "sampler.ula_step_factor",
            f"must be < 2 (Euler-Maruyama is unstable beyond 2 / lambda_max), got {self.ula_step_factor}",
        )
        positive(self.checkpoint_every, "sampler.checkpoint_every", integer=True)
        positive(self.replicas, "sampler.replicas", integer=True)
        require(self.replicas >= 2, "sampler.replicas", f"must be at least 2 (a ladder), got {self.replicas}")
        positive(self.beta_min, "sampler.beta_min")
        require(self.beta_min < 1, "sampler.beta_min", f"must be < 1, got {self.beta_min}")

    @property
    def n_keep(self) -> int:
        """Stored draws per chain."""
        return self.draws // self.thinning


#: what every :class:`SamplerConfig` field is to a run's identity: ``"draws"`` (hashed) or ``"run"`` (not)
FIELD_ROLES = {
    "kind": "draws",
    "model": "draws",
    "collapsed": "draws",
    "chains": "draws",
    "warmup": "draws",
    "draws": "draws",
    "thinning": "draws",
    "seed": "draws",
    "store_weights": "draws",
    "target_accept": "draws",
    "max_tree_depth": "draws",
    "dense_mass": "draws",
    "step_size": "draws",
    "ula_step_factor": "draws",
    "init": "draws",
    "precision": "draws",
    "save_warmup": "draws",
    "rank": "draws",
    "basis": "draws",
    "attention_scale": "draws",
    "limit": "draws",
    "replicas": "draws",
    "beta_min": "draws",
    "progress_bar": "run",
    "checkpoint_every": "run",
    "chain_method": "run",
    "devices": "run",
    "path_space": "run",
}
#: the run options: never hashed (the checkpoint interval moves no draw: the runner's chunking is exact)
RUN_OPTIONS = tuple(k for k, role in FIELD_ROLES.items() if role == "run")


#: fields hashed only in runs of the samplers that read them (their registry ``options``): options added after
#: version 0.3.0, so that adding a sampler left the hash of every run of the other samplers as it was
SAMPLER_ONLY_FIELDS = ("replicas", "beta_min")


def hashed_settings(cfg: SamplerConfig) -> dict:
    """The fields of ``cfg`` that determine its draws (role ``"draws"`` in :data:`FIELD_ROLES`; those of
    :data:`SAMPLER_ONLY_FIELDS` only where ``cfg``'s sampler reads them)."""
    reads = REGISTRY[cfg.kind].options
    return {
        f.name: getattr(cfg, f.name)
        for f in fields(cfg)
        if FIELD_ROLES[f.name] == "draws" and (f.name not in SAMPLER_ONLY_FIELDS or f.name in reads)
    }


def settings_hash(cfg: SamplerConfig, *parts) -> str:
    """SHA-256 (hex) of ``cfg``'s hashed settings, the package version and ``parts``.

    The one hash of a run's identity: ``parts`` are what else determines it (the checkpoint adds the network
    spec, the model and the data arrays; a sweep cell adds its other config tables and its data file's digest).
    A part is ``None`` (skipped), ``str``, ``bytes``, a dict (hashed as sorted JSON) or an array (its dtype,
    shape and bytes).
    """
    from .._version import __version__

    h = hashlib.sha256()
    h.update(
        json.dumps({"sampler": hashed_settings(cfg), "version": __version__}, sort_keys=True, default=str).encode()
    )
    for part in parts:
        if part is None:
            continue
        if isinstance(part, str):
            h.update(b"s" + part.encode())
        elif isinstance(part, bytes):
            h.update(b"b" + part)
        elif isinstance(part, dict):
            h.update(b"d" + json.dumps(part, sort_keys=True, default=str).encode())
        else:
            a = np.ascontiguousarray(np.asarray(part))
            h.update(f"a{a.dtype.str}{a.shape}".encode() + a.tobytes())
    return h.hexdigest()


__all__ = [
    "SamplerConfig",
    "KINDS",
    "MODELS",
    "SAMPLER_MODELS",
    "INITS",
    "PRECISIONS",
    "CHAIN_METHODS",
    "LAYOUT_FIELDS",
    "ATTENTION_MODELS",
    "ATTENTION_OPTIONS",
    "LIMITS",
    "check_attention_options",
    "FIELD_ROLES",
    "RUN_OPTIONS",
    "SAMPLER_ONLY_FIELDS",
    "hashed_settings",
    "settings_hash",
]
