"""NUTS on the pseudo-posterior of factored attention through the chunked runner (docs/potts.md §11.1).

:class:`PseudoPosterior` runs :class:`~._model.PseudoPosteriorModel` with the runner every posterior of the
package uses (:func:`bayes_attn.inference.run_chains`: progress bar, a checkpoint after every chunk, an
exact resume, chains laid out over devices), returns an ArviZ DataTree and judges it with the package's one
verdict, :func:`bayes_attn.diagnostics.summarize`, on the gauge-fixed couplings ``K0`` (never on raw ``A``,
``V``: the (c, 1/c) scale symmetry).  The run settings are a :class:`~bayes_attn.config.SamplerConfig`
(``kind = "nuts"``; its ``model`` field names the attention-network models of ``bayes-attn sample`` and is not
read here: the Potts model is :attr:`PseudoPosteriorModel.kind`, recorded in the DataTree's attributes).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from .._errors import nonnegative_int, positive, require
from ..config import SamplerConfig, Thresholds
from ..diagnostics import summarize
from ..inference import Settings, fingerprint, package_versions, run_chains
from ..potts import check_sequences, check_weights, pl_sites
from ._model import PseudoPosteriorArgs, PseudoPosteriorModel

#: target acceptance of NUTS on the pseudo-posterior (project choice: above NumPyro's 0.8, the posterior of
#: the bilinear (A, V) is curved along the (c, 1/c) scale direction)
TARGET_ACCEPT = 0.85

#: dimension names of the stored quantities (after ``chain``, ``draw``)
DIMS = {
    "A": ("site", "site_"),
    "V": ("colour", "colour_"),
    "b": ("site", "colour"),
    "K0": ("site", "site_", "colour", "colour_"),
    "h0": ("site", "colour"),
}


def seed_of(key) -> int:
    """The runner's seed of ``key``: an int is the seed itself; a JAX key ``k`` (``PRNGKey``'s raw uint32 pair
    or a typed key) is read as the seed ``n`` with ``PRNGKey(n) == k``, so that the chains' keys are
    ``split(k, chains)``, as NumPyro's ``MCMC.run(k)`` splits them."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return nonnegative_int(int(key), "seed")
    k = jnp.asarray(key)
    data = np.asarray(jax.random.key_data(k) if jnp.issubdtype(k.dtype, jax.dtypes.prng_key) else k)
    require(
        data.shape == (2,) and data.dtype == np.uint32,
        "key",
        f"must be a seed (int) or a JAX PRNG key, got {data.dtype} array of shape {data.shape}",
    )
    hi, lo = int(data[0]), int(data[1])
    require(hi < 2**31, "key", "has no nonnegative 64-bit seed (use an int seed)")
    return (hi << 32) | lo


def check_metric(inverse_mass_matrix, p: int) -> np.ndarray:
    """A fixed NUTS metric for ``p`` free parameters, validated: ``(p,)`` (diagonal) or ``(p, p)`` (dense), finite,
    positive (definite: a Cholesky factor exists; symmetric); one line naming ``inverse_mass_matrix`` otherwise."""
    m = np.asarray(inverse_mass_matrix, dtype=np.float64)
    field = "inverse_mass_matrix"
    require(m.shape in ((p,), (p, p)), field, f"must have shape ({p},) or ({p}, {p}), got {m.shape}")
    require(bool(np.all(np.isfinite(m))), field, "must be finite")
    if m.ndim == 1:
        require(bool(np.all(m > 0)), field, "must be positive")
        return m
    require(np.allclose(m, m.T, rtol=1e-10, atol=1e-12 * np.abs(m).max()), field, "must be symmetric")
    try:
        np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        require(False, field, "must be positive definite")
    return m


def to_datatree(groups: dict, model: PseudoPosteriorModel, s, weights, attrs: dict) -> xr.DataTree:
    """The run's DataTree: ``posterior`` (A, V, K0, (b, h0)), ``sample_stats``, ``warmup_sample_stats`` (and
    ``warmup_posterior`` when stored), ``observed_data`` (the sequences and their weights), root attributes
    ``attrs`` with the model and package versions."""

    def ds(group: dict) -> xr.Dataset:
        data = {k: xr.DataArray(np.asarray(v), dims=("chain", "draw", *DIMS.get(k, ()))) for k, v in group.items()}
        nc, nd = np.shape(next(iter(group.values())))[:2]
        return xr.Dataset(data, coords={"chain": np.arange(nc), "draw": np.arange(nd)})

    root = {
        "model": model.kind,
        "L": model.L,
        "C": model.C,
        "fields": int(model.fields),
        "package_versions": json.dumps(package_versions()),
    }
    for k, v in attrs.items():
        root[k] = v if isinstance(v, (str, int, float)) else json.dumps(v)
    tree = {
        "/": xr.Dataset(attrs=root),
        **{g: ds(d) for g, d in groups.items() if d},
        "observed_data": xr.Dataset(
            {"sequences": (("sequence", "site"), np.asarray(s)), "weights": ("sequence", np.asarray(weights))}
        ),
    }
    return xr.DataTree.from_dict(tree)


class PseudoPosterior:
    """NUTS on the pseudo-posterior of single-head factored attention (docs/potts.md §11.1), compiled once for a
    data shape (the sequences, omega and the prior scales travel as traced arguments), so repeated calibration
    runs on new data sets reuse it.

    ``omega``: the pseudo-likelihood's weight (:func:`~bayes_attn.potts.sandwich_omega`); ``scale_A``,
    ``scale_V``: prior s.d. of A and V; ``scale_b``: prior s.d. of per-site fields (``None``: no fields).
    ``chains``, ``warmup``, ``draws``, ``max_tree_depth``, ``progress_bar``, ``checkpoint_every`` and
    ``chain_method``: the :class:`~bayes_attn.config.SamplerConfig` fields of the same names (target acceptance
    :data:`TARGET_ACCEPT`, diagonal mass matrix adapted in warm-up unless :meth:`run` is given a metric; chains one
    after another by default).  ``thresholds``: the gates of the verdict (:func:`bayes_attn.diagnostics.summarize`)."""

    def __init__(
        self,
        L: int,
        C: int,
        *,
        omega: float = 1.0,
        scale_A: float = 1.0,
        scale_V: float = 1.0,
        scale_b: float | None = None,
        chains: int = 2,
        warmup: int = 300,
        draws: int = 300,
        max_tree_depth: int = 8,
        progress_bar: bool = False,
        checkpoint_every: int = 100,
        chain_method: str = "sequential",
        thresholds: Thresholds = Thresholds(),
    ):
        positive(L, "L", integer=True)
        positive(C, "C", integer=True)
        positive(omega, "omega")
        for name, v in (("scale_A", scale_A), ("scale_V", scale_V)) + ((("scale_b", scale_b),) if scale_b else ()):
            positive(v, name)
        self.L, self.C, self.omega, self.scales = L, C, float(omega), (scale_A, scale_V, scale_b)
        self.model = PseudoPosteriorModel(L, C, fields=scale_b is not None)
        self.cfg = SamplerConfig(
            kind="nuts",
            chains=chains,
            warmup=warmup,
            draws=draws,
            target_accept=TARGET_ACCEPT,
            max_tree_depth=max_tree_depth,
            dense_mass=False,
            progress_bar=progress_bar,
            checkpoint_every=checkpoint_every,
            chain_method=chain_method,
        )
        self.settings = Settings.from_config(self.cfg)
        self.thresholds = thresholds

    def args(self, s, omega: float | None = None, weights=None) -> PseudoPosteriorArgs:
        """The traced arguments of a run on sequences ``s`` (validated: (M, L) colours in [0, C)) with sequence
        ``weights`` (M,) (validated: finite, >= 0, not all zero; default ones)."""
        s = check_sequences(s, self.C, self.L, "sequences")
        omega = self.omega if omega is None else positive(float(omega), "omega")
        scale_A, scale_V, scale_b = self.scales
        f = lambda x: jnp.asarray(x, jnp.float64)  # noqa: E731
        return PseudoPosteriorArgs(
            jnp.asarray(s),
            f(omega),
            f(scale_A),
            f(scale_V),
            f(1.0 if scale_b is None else scale_b),
            f(check_weights(weights, len(s))),
        )

    def run(
        self,
        key,
        s,
        init=None,
        omega: float | None = None,
        *,
        weights=None,
        checkpoint=None,
        resume: bool = False,
        stop_after_chunks: int | None = None,
        inverse_mass_matrix=None,
    ) -> dict:
        """Draws of A, V, (b), gauge-fixed couplings K0 (chains, draws, L, L, C, C), gauged fields h0, R-hat /
        ESS of the K0 entries of the pairs i < j, divergences; ``datatree`` (the run) and ``report`` (its
        :func:`~bayes_attn.diagnostics.summarize` verdict).

        ``key``: the seed (an int, or a JAX key: :func:`seed_of`).  ``init``: a single-head
        :class:`~bayes_attn.potts.FactoredParams` record (e.g. the MAP fit) where every chain starts (default:
        NumPyro's ``init_to_uniform``).  ``omega``: this run's weight (default the constructor's).  ``weights``:
        sequence weights (M,) (default ones); integer counts give exactly the run on the sequences repeated that
        many times, so data with few distinct sequences may be passed once each with their counts.
        ``checkpoint``: a file written after every chunk of ``checkpoint_every`` draws; ``resume``: continue
        from it (the draws of an uninterrupted run); ``stop_after_chunks``: stop after that many chunks
        (:class:`~bayes_attn.inference.SamplingInterrupted`).  ``inverse_mass_matrix``: a fixed metric, ``(p,)``
        (diagonal) or ``(p, p)`` (dense), in the flat order of ``jax.flatten_util.ravel_pytree`` of the sites
        {A_off, V, (b)} (the order of :func:`~bayes_attn.potts.curvature_adjustment`'s ``mode``); warm-up then
        adapts the step size only.  The Laplace covariance ``curvature_adjustment(...)["covariance"]`` (omega = 1)
        is the natural one (docs/potts.md (11.1d))."""
        metric = None if inverse_mass_matrix is None else check_metric(inverse_mass_matrix, self.model.n_params)
        cfg = replace(self.cfg, seed=seed_of(key), dense_mass=metric is not None and metric.ndim == 2)
        settings = self.settings if metric is None else Settings.from_config(cfg, fixed_metric=True)
        args = self.args(s, omega, weights)
        positions = None
        if init is not None:
            z = pl_sites(init, self.L)
            require(
                set(z) == set(self.model.site_shapes()),
                "init",
                "must have fields exactly when the pseudo-posterior has them (scale_b)",
            )
            positions = jax.tree.map(lambda x: jnp.broadcast_to(x, (cfg.chains, *x.shape)), z)
        starts = () if positions is None else tuple(np.asarray(positions[k]) for k in sorted(positions))
        fp = fingerprint(cfg, None, self.model, (*args.data_arrays(), *starts, *(() if metric is None else (metric,))))
        groups = run_chains(
            "nuts",
            self.model,
            args,
            cfg,
            settings,
            fp=fp,
            positions=positions,
            inverse_mass_matrix=metric,
            checkpoint=checkpoint,
            resume=resume,
            stop_after_chunks=stop_after_chunks,
        )
        scale_A, scale_V, scale_b = self.scales
        dt = to_datatree(
            groups,
            self.model,
            args.s,
            args.weights,
            {
                "sampler": "nuts",
                "seed": cfg.seed,
                "chains": cfg.chains,
                "warmup": cfg.warmup,
                "draws": cfg.draws,
                "target_accept": cfg.target_accept,
                "max_tree_depth": cfg.max_tree_depth,
                "omega": float(args.omega),
                "scale_A": scale_A,
                "scale_V": scale_V,
                "scale_b": "none" if scale_b is None else scale_b,
                "init": "given" if init is not None else "uniform",
                "metric": "adapted diagonal" if metric is None else f"given, {('diagonal', 'dense')[metric.ndim - 1]}",
                "resumed": int(bool(resume)),
                "pseudo_posterior": "omega * log PL + log prior; not the posterior of the Potts model",
            },
        )
        with warnings.catch_warnings():  # one chain: R-hat is undefined (NaN), which the verdict reports
            warnings.simplefilter("ignore", RuntimeWarning)
            report = summarize(dt, self.thresholds)
        post = groups["posterior"]
        out = {k: np.asarray(post[k]) for k in ("A", "V", "K0", "b", "h0") if k in post}
        nc = out["V"].shape[0]
        out.update(
            omega=float(args.omega),
            pseudo_posterior=True,
            rhat_K_max=report.max_rhat if nc > 1 else float("nan"),
            ess_K_min=report.min_ess_bulk,
            divergences=report.divergences,
            datatree=dt,
            report=report,
        )
        return out


def sample_pseudo_posterior(
    key,
    s,
    C: int,
    *,
    omega: float = 1.0,
    scale_A: float = 1.0,
    scale_V: float = 1.0,
    scale_b: float | None = None,
    chains: int = 2,
    warmup: int = 300,
    draws: int = 300,
    init=None,
    weights=None,
    progress_bar: bool = False,
    checkpoint=None,
    resume: bool = False,
    stop_after_chunks: int | None = None,
    inverse_mass_matrix=None,
) -> dict:
    """One NUTS run on the pseudo-posterior (see :class:`PseudoPosterior` and :meth:`PseudoPosterior.run`)."""
    L = np.shape(s)[1]
    post = PseudoPosterior(
        L,
        C,
        omega=omega,
        scale_A=scale_A,
        scale_V=scale_V,
        scale_b=scale_b,
        chains=chains,
        warmup=warmup,
        draws=draws,
        progress_bar=progress_bar,
    )
    return post.run(
        key,
        s,
        init,
        weights=weights,
        checkpoint=checkpoint,
        resume=resume,
        stop_after_chunks=stop_after_chunks,
        inverse_mass_matrix=inverse_mass_matrix,
    )


__all__ = [
    "TARGET_ACCEPT",
    "DIMS",
    "PseudoPosterior",
    "check_metric",
    "sample_pseudo_posterior",
    "seed_of",
    "to_datatree",
]
