"""Potts data sets: couplings, fields, beta tuned to a mean Hamming distance, PT samples, splits
(docs/potts.md §1.2, §2).  One function serves ``bayes-attn potts sample`` and the examples.

Seeds (project choice): ``seed`` draws the couplings and the fields (the model); ``data_seed``
(default ``seed``) drives the Monte Carlo, so several data seeds are independent samples of the
same model.  beta tuning uses ``seed``, so every data seed of one model shares its beta.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

import jax
import numpy as np

from .._errors import InputError, nonnegative_int, one_of, positive, require
from ._equilibrate import equilibrium_samples, tune_beta
from ._fields import generate_fields
from ._model import GENERATORS, generate_couplings

#: the energy and colour convention of the generated data, recorded in the ``info`` of every data set
CONVENTION = "H = -sum_{i<j} J_ij U_{s_i s_j} - sum_i h_i(s_i), P ~ exp(-beta H), colours 0..C-1"


@dataclass(frozen=True)
class SampleConfig:
    """The ``[potts]`` table of ``potts sample`` (every key optional; validated)."""

    generator: str = "G2"
    L: int = 20
    C: int = 20
    seed: int = 0
    data_seed: int | None = None
    field_sigma: float = 0.0
    consensus: float = 0.0
    beta: float | str = "tune"
    target_D: float = 0.3
    tol_D: float = 0.01
    M: int = 3000
    n_val: int = 1000
    n_test: int = 2000
    rungs: int = 16
    beta_min: float = 0.8
    beta_max: float = 4.0
    systems: int = 200
    burn_sweeps: int = 1000
    thin: int = 10
    tune_systems: int = 100
    tune_sweeps: int = 600
    check_other: bool = True

    def __post_init__(self):
        one_of(self.generator, GENERATORS, "potts.generator")
        for k in (
            "L",
            "C",
            "M",
            "n_val",
            "n_test",
            "rungs",
            "systems",
            "burn_sweeps",
            "thin",
            "tune_systems",
            "tune_sweeps",
        ):
            positive(getattr(self, k), f"potts.{k}", integer=True)
        require(self.L >= 2, "potts.L", f"must be >= 2, got {self.L}")
        require(self.C >= 2, "potts.C", f"must be >= 2, got {self.C}")
        nonnegative_int(self.seed, "potts.seed")
        if self.data_seed is not None:
            nonnegative_int(self.data_seed, "potts.data_seed")
        for k in ("target_D", "tol_D", "beta_min", "beta_max"):
            positive(getattr(self, k), f"potts.{k}")
        require(self.target_D < 1, "potts.target_D", f"must be < 1, got {self.target_D}")
        require(self.beta_max > self.beta_min, "potts.beta_max", "must be > potts.beta_min")
        for k in ("field_sigma", "consensus"):
            v = getattr(self, k)
            require(
                isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) and v >= 0,
                f"potts.{k}",
                f"must be a finite number >= 0, got {v!r}",
            )
        if self.beta != "tune":
            positive(self.beta, "potts.beta")
        require(isinstance(self.check_other, bool), "potts.check_other", "must be true or false")

    @classmethod
    def from_table(cls, table: dict) -> "SampleConfig":
        require(isinstance(table, dict), "potts", "must be a table")
        names = {f.name for f in fields(cls)}
        extra = sorted(set(table) - names)
        require(not extra, f"potts.{extra[0]}" if extra else "potts", "unknown key")
        try:
            return cls(**table)
        except TypeError as exc:  # pragma: no cover - guarded by the key check
            raise InputError(f"potts: {exc}") from None


def make_model(cfg: SampleConfig):
    """(J, U, h or None, consensus colours or None) of the configuration's model."""
    J, U = generate_couplings(cfg.generator, cfg.L, cfg.C, cfg.seed)
    h, cons = generate_fields(
        cfg.L, cfg.C, cfg.seed, field_sigma=float(cfg.field_sigma), consensus=float(cfg.consensus)
    )
    return J, U, h, cons


def tune(cfg: SampleConfig, progress=None):
    """beta bisected to ``target_D`` for the configuration's model (potts.md §2.3)."""
    J, U, h, _ = make_model(cfg)
    k_tune = jax.random.split(jax.random.PRNGKey(cfg.seed))[0]
    return tune_beta(
        k_tune,
        J,
        U,
        h,
        target=cfg.target_D,
        tol=cfg.tol_D,
        beta_min=cfg.beta_min,
        beta_max=cfg.beta_max,
        rungs=cfg.rungs,
        systems=cfg.tune_systems,
        sweeps=cfg.tune_sweeps,
        thin=cfg.thin,
        progress=progress,
    )


def make_dataset(cfg: SampleConfig, progress=None) -> dict:
    """Arrays of a DATA.npz: ``sequences`` (M, L), ``val_sequences``, ``test_sequences``, ``J``, ``U``,
    ``beta``, ``h`` (L, C) when the model has fields, ``consensus`` (L,), and ``info`` (JSON text:
    configuration, convention, tuning and equilibration reports)."""
    J, U, h, cons = make_model(cfg)
    info = {"config": asdict(cfg), "convention": CONVENTION}
    beta = cfg.beta
    if beta == "tune":
        tr = tune(cfg, progress)
        beta = tr.beta
        info["tuning"] = {
            "beta": tr.beta,
            "D": tr.D,
            "grid_betas": tr.grid_betas.tolist(),
            "grid_D": tr.grid_D.tolist(),
            "history": tr.history,
            "monotone": tr.monotone,
            "reached": abs(tr.D - cfg.target_D) <= cfg.tol_D,
        }
    n = cfg.M + cfg.n_val + cfg.n_test
    ds = cfg.seed if cfg.data_seed is None else cfg.data_seed
    key = jax.random.split(jax.random.PRNGKey(ds))[1]  # data_seed = seed: the keys of earlier releases
    s, rep = equilibrium_samples(
        key,
        J,
        U,
        h,
        float(beta),
        n,
        beta_min=min(cfg.beta_min, 0.5 * float(beta)),
        rungs=cfg.rungs,
        systems=min(cfg.systems, n),
        burn_sweeps=cfg.burn_sweeps,
        thin=cfg.thin,
        check_other=cfg.check_other,
    )
    info["equilibration"] = rep.summary()
    M, nv = cfg.M, cfg.n_val
    out = {
        "sequences": s[:M],
        "val_sequences": s[M : M + nv],
        "test_sequences": s[M + nv :],
        "J": J,
        "U": U,
        "beta": np.float64(beta),
        "info": json.dumps(info, default=float),
    }
    if h is not None:
        out["h"] = h
        out["consensus"] = cons
    return out


__all__ = ["SampleConfig", "make_model", "tune", "make_dataset", "CONVENTION"]
