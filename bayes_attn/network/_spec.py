"""Network specification (docs/theory.md §1, §2, §3).

A frozen dataclass validated at construction.  Widths follow theory.md: ``widths``
holds ``(N_1, ..., N_L, N_a)`` (the width entering each attention layer, then the
readout width); ``variances`` holds ``(sigma_0^2, sigma_1^2, ..., sigma_L^2, sigma_a^2)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import InputError, one_of, positive, require

#: values of ``readout``: the last layer's attention is pooled at the last query, at the first, or averaged over
#: the queries (theory.md §2.3)
READOUTS = ("last", "first", "mean")


def _as_tuple(value, n: int, name: str, *, integer: bool) -> tuple:
    if isinstance(value, (list, tuple)):
        vals = tuple(value)
        require(len(vals) == n, name, f"needs {n} entries, got {len(vals)}")
    else:
        vals = (value,) * n
    for i, v in enumerate(vals):
        positive(v, f"{name}[{i}]" if isinstance(value, (list, tuple)) else name, integer=integer)
    return tuple(int(v) if integer else float(v) for v in vals)


class _Sizes:
    """Sizes and prior variances derived from ``heads`` and ``variances`` (shared by :class:`NetworkSpec`
    and its traced twin :class:`Hyper`)."""

    @property
    def n_layers(self) -> int:
        return len(self.heads)

    @property
    def n_paths(self) -> int:
        """``n_pi = prod_l H_l``."""
        return math.prod(self.heads)

    def p(self, l: int) -> int:
        """Size ``p_l = prod_{k=l}^{L} H_k`` of ``U_l`` (1-based ``l``; ``p_{L+1} = 1``)."""
        return math.prod(self.heads[l - 1 :])

    @property
    def sigma2_input(self):
        return self.variances[0]

    @property
    def sigma2_layers(self):
        return self.variances[1:-1]

    @property
    def sigma2_readout(self):
        return self.variances[-1]


@dataclass(frozen=True)
class NetworkSpec(_Sizes):
    """Deep multi-head attention network with fixed attention.

    Parameters
    ----------
    heads : sequence of int
        Heads per layer ``(H_1, ..., H_L)``; ``L = len(heads) >= 1``.
    n0 : int
        Token dimension ``N_0``.
    width : int or sequence of int
        One width ``N`` for every layer (``N_1 = ... = N_L = N_a = N``) or the ``L + 1``
        widths ``(N_1, ..., N_L, N_a)``.
    variances : float or sequence of float
        Prior variances ``(sigma_0^2, sigma_1^2..sigma_L^2, sigma_a^2)``; a scalar applies
        to all ``L + 2``.  Default 1.
    temperature : float
        Gibbs temperature ``T > 0`` (likelihood noise variance).
    readout : {"last", "first", "mean"}
        Pooling of the last layer's attention (theory.md §2.3).
    """

    heads: tuple[int, ...]
    n0: int
    width: int | tuple[int, ...] = 100
    variances: float | tuple[float, ...] = 1.0
    temperature: float = 0.01
    readout: str = "last"
    widths: tuple[int, ...] = field(init=False)

    def __post_init__(self):
        heads = self.heads
        require(
            isinstance(heads, (list, tuple)) and len(heads) >= 1,
            "network.heads",
            f"needs at least one layer, got {heads!r}",
        )
        heads = tuple(positive(h, f"network.heads[{i}]", integer=True) for i, h in enumerate(heads))
        object.__setattr__(self, "heads", tuple(int(h) for h in heads))
        positive(self.n0, "network.n0", integer=True)
        L = len(heads)
        widths = _as_tuple(self.width, L + 1, "network.width", integer=True)
        object.__setattr__(self, "widths", widths)
        if isinstance(self.width, list):
            object.__setattr__(self, "width", tuple(self.width))
        var = _as_tuple(self.variances, L + 2, "network.variances", integer=False)
        object.__setattr__(self, "variances", var)
        positive(self.temperature, "network.temperature")
        object.__setattr__(self, "temperature", float(self.temperature))
        one_of(self.readout, READOUTS, "network.readout")

    @property
    def gp_scale(self) -> float:
        """``sigma_a^2 prod_l sigma_l^2``: the GP value of ``U_1`` is this times the identity."""
        return self.sigma2_readout * math.prod(self.sigma2_layers)

    def hyper(self) -> "Hyper":
        """The widths, variances and temperature as traced JAX leaves (:class:`Hyper`)."""
        return Hyper.from_spec(self)

    def with_(self, **changes) -> "NetworkSpec":
        """A copy with fields changed (re-validated)."""
        kw = dict(
            heads=self.heads,
            n0=self.n0,
            width=self.width,
            variances=self.variances,
            temperature=self.temperature,
            readout=self.readout,
        )
        kw.update(changes)
        return NetworkSpec(**kw)

    def check_inputs(self, n0: int, heads: Sequence[int]) -> None:
        """Raise ``InputError`` when a task's token dimension or heads disagree with the spec."""
        if int(n0) != self.n0:
            raise InputError(f"network.n0: spec has {self.n0} but the data have N0={n0}")
        if tuple(int(h) for h in heads) != self.heads:
            raise InputError(f"network.heads: spec has {self.heads} but the attention has {tuple(heads)}")


@jax.tree_util.register_pytree_node_class
class Hyper(_Sizes):
    """A :class:`NetworkSpec` whose widths, variances and temperature are JAX leaves.

    Compiled functions (the theory solver, every sampler) take it as a **traced** argument, with
    the heads as static structure: one compiled program then serves every width, temperature and
    prior variance of the same array shapes (a width x temperature scan, the cells of a sweep).
    It exposes the attributes that the theory reads from a spec (``heads``, ``widths``,
    ``variances``, ``temperature``, ``n_layers``, ``p``, ``sigma2_*``).
    """

    def __init__(self, heads, widths, variances, temperature):
        self.heads = tuple(int(h) for h in heads)
        self.widths = widths
        self.variances = variances
        self.temperature = temperature

    @classmethod
    def from_spec(cls, spec: NetworkSpec) -> "Hyper":
        return cls(
            spec.heads,
            # converted on the host, so that no conversion program is compiled on the device
            jnp.asarray(np.asarray(spec.widths, dtype=np.float64)),
            jnp.asarray(np.asarray(spec.variances, dtype=np.float64)),
            jnp.asarray(np.asarray(spec.temperature, dtype=np.float64)),
        )

    def tree_flatten(self):
        return (self.widths, self.variances, self.temperature), self.heads

    @classmethod
    def tree_unflatten(cls, heads, leaves):
        return cls(heads, *leaves)


__all__ = ["NetworkSpec", "READOUTS", "Hyper"]
