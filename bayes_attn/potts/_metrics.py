"""One report for every fitted model: test NLL gap, couplings and fields in the
zero-sum gauge, factor recovery.

``fa_metrics(params, model, data)`` serves ``bayes-attn potts fit`` and every example.  The gauge
is stated in the result (``"gauge": "zero-sum"``): couplings are symmetrised and zero-summed
(:func:`gauge_fix`), fields carry the row means of the couplings (:func:`gauge_fields`), and the
truth ``(beta J (x) U, beta h)`` goes through the same maps.
"""

from __future__ import annotations

import jax
import numpy as np

from ._attention import fa_attention, fa_couplings, fa_logits
from ._gauge import (
    abs_corr,
    factor_recovery,
    gauge_fields,
    gauge_fix,
    kronecker_rank1,
    offdiag,
    rel_error,
    true_couplings,
    zero_sum,
)
from ._model import Potts, nll_star, pseudo_nll
from ._params import PARAMS, FactoredParams, PlmParams, as_params
from ._plmdca import plm_couplings, plm_logits

#: the gauge in which :func:`fa_metrics` compares couplings and fields (its ``"gauge"`` entry)
GAUGE = (
    "zero-sum (couplings symmetrised then zero-summed over both colours; fields carry the couplings' "
    "colour means and are centred over colours)"
)


def logits_fn(params):
    """The conditional-logits function of a fitted model's record: factored attention or plmDCA."""
    return plm_logits if isinstance(as_params(params), PlmParams) else fa_logits


def couplings_and_fields(params):
    """(K (L, L, C, C), fields (L, C) or None) of a fitted factored-attention or plmDCA model."""
    params = as_params(params)
    if isinstance(params, PlmParams):
        return plm_couplings(params), np.asarray(params.h)
    return np.asarray(fa_couplings(params)), (None if params.b is None else np.asarray(params.b))


def fa_metrics(params, model: Potts | None, data: dict, *, nll=None) -> dict:
    """Metrics of a fit on ``data`` = {"val": (n, L), "test": (n, L)} (either optional).

    ``params``: a parameter record (:class:`FactoredParams`, :class:`SoftmaxParams`, :class:`PlmParams`) or,
    with ``nll``, the parameters of a model without coupling parameters (the transformer's pytree).
    ``model``: the true Potts model or ``None`` (then only the NLLs).  ``nll``: optional
    ``sequences -> PL loss`` for models without coupling parameters (the transformer).
    Keys: val_nll, test_nll; with the truth: nll_star, gap; corr_K and eps_J of the gauged
    couplings (i != j); corr_h and eps_h of the gauged fields (when the truth has fields);
    corr_A_J and corr_V_U (one free head); corr_Jhat_J_rank1 (Kronecker rank-1 projection)."""
    if nll is None:
        params = as_params(params)
        lg = logits_fn(params)
        nll = lambda x: float(pseudo_nll(lg(params, x), x))  # noqa: E731
    out = {"gauge": GAUGE}
    for split in ("val", "test"):
        if data.get(split) is not None:
            out[f"{split}_nll"] = float(nll(np.asarray(data[split])))
    if model is None:
        return out
    if "test_nll" in out:
        out["nll_star"] = nll_star(model, data["test"])
        out["gap"] = out["test_nll"] - out["nll_star"]
    if not isinstance(params, PARAMS):
        return out
    K, b = couplings_and_fields(params)
    T = true_couplings(model.beta, model.J, model.U)
    K0, T0 = offdiag(gauge_fix(K)), offdiag(zero_sum(T))
    out["corr_K"] = abs_corr(K0, T0)
    out["eps_J"] = rel_error(K0, T0)
    if model.h is not None:
        h0, t0 = gauge_fields(b, K), gauge_fields(model.beta * model.h, T)
        out["corr_h"] = abs_corr(h0, t0)
        out["eps_h"] = rel_error(h0, t0)
    Jh, _, frac = kronecker_rank1(K)
    out["corr_Jhat_J_rank1"] = abs_corr(offdiag(Jh), offdiag(model.J))
    if isinstance(params, FactoredParams) and np.shape(params.A)[0] == 1:
        A = np.asarray(fa_attention(params))[0]
        out.update(factor_recovery(0.5 * (A + A.T), np.asarray(params.V)[0], model.J, model.U))
    return out


def param_count(params: dict) -> int:
    """The number of scalar parameters in the pytree ``params`` (the sizes of its leaves, summed)."""
    return int(sum(np.size(x) for x in jax.tree.leaves(params)))


__all__ = ["GAUGE", "logits_fn", "couplings_and_fields", "fa_metrics", "param_count"]
