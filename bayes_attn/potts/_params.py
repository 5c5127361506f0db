"""Parameter records of the fitted models, one per model (JAX pytrees: NamedTuples).

* :class:`FactoredParams` -- free factored attention (docs/potts.md §3.2): attention ``A`` (H, L, L), its
  diagonal masked, values ``V`` (H, C, C), optional per-site fields ``b`` (L, C);
* :class:`SoftmaxParams` -- factored attention whose attention is a softmax of query-key scores of positional
  embeddings: ``P`` (L, d_p), ``WQ`` and ``WK`` (H, d_k, d_p), ``V`` (H, C, C), optional ``b`` (L, C);
* :class:`PlmParams` -- asymmetric plmDCA (§7.1): couplings ``W`` (L, L, C, C), fields ``h`` (L, C).

Every function of :mod:`bayes_attn.potts` dispatches on the record's type.  A record whose ``b`` is
``None`` has no fields (``None`` is an empty pytree node, so the records go through ``jax.jit``,
``jax.grad`` and the optimisers as they are).  :func:`as_params` is the one place where a plain dict of
arrays (an earlier spelling, or arrays read from a file) becomes a record; it is called at the public
entry points only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from .._errors import InputError


class FactoredParams(NamedTuple):
    """Free factored attention: ``A`` (H, L, L) (diagonal masked), ``V`` (H, C, C), fields ``b`` (L, C) or
    ``None``."""

    A: Any
    V: Any
    b: Any = None


class SoftmaxParams(NamedTuple):
    """Softmax factored attention: positional embeddings ``P`` (L, d_p), query and key maps ``WQ``, ``WK``
    (H, d_k, d_p), values ``V`` (H, C, C), fields ``b`` (L, C) or ``None``."""

    P: Any
    WQ: Any
    WK: Any
    V: Any
    b: Any = None


class PlmParams(NamedTuple):
    """Asymmetric plmDCA: couplings ``W`` (L, L, C, C) (diagonal blocks masked) and fields ``h`` (L, C)."""

    W: Any
    h: Any


#: the records of factored attention (free and softmax attention)
FA_PARAMS = (FactoredParams, SoftmaxParams)
#: every parameter record of a model with coupling parameters
PARAMS = (FactoredParams, SoftmaxParams, PlmParams)


def as_params(params, field: str = "params"):
    """``params`` as its model's record: a record is returned as it is; a dict of arrays is converted when
    its keys are the fields of exactly one record (optional ``b`` may be absent); anything else is an
    :class:`~bayes_attn.InputError` naming ``field``."""
    if isinstance(params, PARAMS):
        return params
    if not isinstance(params, Mapping):
        raise InputError(
            f"{field}: must be FactoredParams, SoftmaxParams or PlmParams, got {type(params).__name__}", field
        )
    keys = set(params)
    for cls in PARAMS:
        required = {k for k in cls._fields if k not in cls._field_defaults}
        if required <= keys <= set(cls._fields):
            return cls(**params)
    raise InputError(
        f"{field}: keys {sorted(keys)} are not the parameters of factored attention (A, V, b), "
        "softmax attention (P, WQ, WK, V, b) or plmDCA (W, h)",
        field,
    )


def params_dict(params) -> dict:
    """The arrays of a record by field name, without the absent (``None``) ones (for files and reports)."""
    return {k: v for k, v in as_params(params)._asdict().items() if v is not None}


__all__ = ["FactoredParams", "SoftmaxParams", "PlmParams", "FA_PARAMS", "PARAMS", "as_params", "params_dict"]
