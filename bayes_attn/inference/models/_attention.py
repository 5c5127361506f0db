"""Sampled attention (``model.kind = "attention"``): queries and keys with Gaussian priors, the value weights
integrated out exactly (docs/attention.md).

Every head ``h`` of layer ``l`` has qk-style parameters of rank ``r`` (docs/theory.md eq. (2.2c)) in the token
directions of a basis ``B`` (``(n0, m)``; the identity when none is given): ``Q_lh = s Z^Q_lh B^T``,
``K_lh = s Z^K_lh B^T`` with ``Z ~ N(0, I)`` entrywise (sites ``z_Q{l}``, ``z_K{l}`` of shape ``(H_l, r, m)``).
The scores read the basis coordinates of the tokens, ``x B``, and the values propagate the tokens themselves,
so the chain ``Z -> scores -> softmax (2.2a) -> path attention (2.4a) -> Phi (4.1b) -> K_U (4.2a)`` is computed
inside the density.  Given the attention the model is the network of docs/theory.md §5, so:

* ``limit = "finite"``: the joint posterior of ``(Z, U)`` at finite width, the order parameters in the sites of
  eq. (5.2f) with their exact density (5.2b) given the kernels of this attention (``U``'s prior does not depend
  on the attention, so the joint density is the product);
* ``limit = "gp"``: the GP limit, ``U_1 = sigma_a^2 prod_l sigma_l^2 I`` fixed and the Gaussian marginal
  likelihood of the kernel exact (eq. (5.1a) at that ``U``).

Stored per draw: ``f`` and ``f_var`` (the Rao–Blackwellised predictor of eqs. (4.2b)–(4.2c) at the draw's
attention and ``U``), ``U`` (and ``U_a``, ``U_l`` at finite width), and the attention maps of the first
:data:`N_MAPS` test inputs, ``attention_{l}`` of shape ``(maps, H_l, S, S)``.

Default prior scale *(project choice, docs/attention.md)*: ``s = (mean_t |x_t B|^2)^(-1/2)`` over the training
tokens, so that a prior score ``k_s . q_t / sqrt(r)`` has standard deviation about 1 (its variance is
``s^4 |x_s B|^2 |x_t B|^2`` whatever the rank): prior attention ranges from uniform to moderately peaked and the
softmax keeps its gradient; the data move it from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..._errors import renamed, require
from ...linalg import KernelData, apply_kernel, gaussian_log_marginal
from ...network import (
    PathKernels,
    effective_weights,
    forward_paths,
    gram,
    pooled_qk_attention,
    propagate_paths,
    path_inputs,
    phi as make_phi,
    predictive,
    qk_scores,
    softmax_keys,
)
from ...theory import OrderParameterLayout, exact_log_density, exact_log_prior_and_likelihood
from ._base import Model, ModelArgs
from ._order_parameters import _flat_site
from ._weights import weight_shapes, weights_from_latent

#: attention maps stored per draw: those of the first ``N_MAPS`` test inputs
N_MAPS = 8


class AttentionInputs(NamedTuple):
    """Traced inputs of the sampled-attention model: the tokens (values), their basis coordinates (what the
    scores read) and the prior scale of the attention parameters."""

    x_train: jnp.ndarray  # (P, S, n0)
    x_test: jnp.ndarray  # (Q, S, n0)
    xa_train: jnp.ndarray  # (P, S, m) = x_train @ B
    xa_test: jnp.ndarray  # (Q, S, m)
    scale: jnp.ndarray  # () prior s.d. of Q', K' entries


def default_attention_scale(xa_train) -> float:
    """``(mean over training tokens of |x B|^2)^(-1/2)``: prior scores of s.d. about 1 (module docstring)."""
    return float(1.0 / np.sqrt(np.mean(np.sum(np.asarray(xa_train, dtype=float) ** 2, axis=-1))))


def attention_maps(z: dict, heads, scale, xa) -> list:
    """Softmax attention ``(B, H_l, S, S)`` of every layer at the sites ``z`` (eqs. (2.2a), (2.2c))."""
    return [softmax_keys(qk_scores(xa, scale * z[f"z_Q{l}"], scale * z[f"z_K{l}"])) for l in range(1, len(heads) + 1)]


def attention_paths(z: dict, heads, scale, xa, readout: str):
    """Path attention vectors ``(B, n_pi, S)`` at the sites ``z``: ``path_attention(attention_maps(...))`` with
    the last layer's attention formed only for the query the readout reads (``pooled_qk_attention``)."""
    L = len(heads)
    lower = attention_maps(z, heads[:-1], scale, xa)
    top = pooled_qk_attention(xa, scale * z[f"z_Q{L}"], scale * z[f"z_K{L}"], readout)
    return propagate_paths(top, lower)


def attention_phi(z: dict, heads, scale, xa, x, readout: str, sigma2_input):
    """``Phi`` (docs/theory.md eq. (4.1b)) of the inputs ``x`` under the attention of the sites ``z``."""
    return make_phi(path_inputs(x, attention_paths(z, heads, scale, xa, readout)), sigma2_input)


@dataclass(frozen=True)
class AttentionModel(Model):
    """Sites ``z_Q{l}``, ``z_K{l}`` (``(H_l, rank, m)``) and, at finite width, ``xi_a, xi_1..xi_L``.

    Static: ``rank``, ``m`` (the basis size, ``n0`` without a basis), ``readout``, ``limit``, the number of stored
    maps and ``data`` (``False``: the prior alone).
    """

    rank: int = 1
    m: int = 1
    readout: str = "last"
    limit: str = "finite"
    n_maps: int = N_MAPS
    data: bool = True

    kind = "attention"

    @property
    def layout(self) -> OrderParameterLayout:
        return OrderParameterLayout.from_heads(self.heads)

    def attention_shapes(self) -> dict[str, tuple[int, ...]]:
        out = {}
        for l, h in enumerate(self.heads, start=1):
            out[f"z_Q{l}"] = (h, self.rank, self.m)
            out[f"z_K{l}"] = (h, self.rank, self.m)
        return out

    def site_shapes(self):
        order = self.layout.site_shapes() if self.limit == "finite" else {}
        return {**self.attention_shapes(), **order}

    def _phi(self, z, args: ModelArgs, split: str):
        inp = args.inputs
        xa, x = (inp.xa_train, inp.x_train) if split == "train" else (inp.xa_test, inp.x_test)
        return attention_phi(z, self.heads, inp.scale, xa, x, self.readout, args.hyper.sigma2_input)

    def gp_U(self, args: ModelArgs):
        """``U_1`` of the GP limit: ``sigma_a^2 prod_l sigma_l^2 I`` (docs/theory.md §4.6)."""
        g = args.hyper.sigma2_readout * jnp.prod(jnp.asarray(args.hyper.sigma2_layers))
        return g * jnp.eye(self.layout.sizes[0])

    def numpyro_model(self, args: ModelArgs):
        z = {
            name: numpyro.sample(name, dist.Normal(0.0, 1.0).expand(shape).to_event(3))
            for name, shape in self.attention_shapes().items()
        }
        if self.limit == "finite":
            xi = {name: numpyro.sample(name, _flat_site(shape)) for name, shape in self.layout.site_shapes().items()}
        if not self.data:
            if self.limit == "finite":
                numpyro.factor("log_density", exact_log_density(self.layout, xi, args.hyper, None, args.y))
            return
        ph = self._phi(z, args, "train")
        kd = KernelData(ph, ph, None)  # contracted, not blocked: the kernel changes at every evaluation
        if self.limit == "finite":
            numpyro.factor("log_density", exact_log_density(self.layout, xi, args.hyper, kd, args.y))
        else:
            numpyro.factor(
                "y", gaussian_log_marginal(apply_kernel(kd, self.gp_U(args)), args.y, args.hyper.temperature)
            )

    def log_prior_and_likelihood(self, z, args: ModelArgs):
        """``(ln p(z), ln p(y | z))`` of :meth:`numpyro_model` from one pass (tempering evaluates both in every
        gradient): the standard normal query and key sites plus, at finite width, the order parameters' prior chain
        (:func:`bayes_attn.theory.exact_log_prior_and_likelihood`); the data term at finite width, or the GP
        marginal likelihood in the limit."""
        prior = sum(jnp.sum(dist.Normal(0.0, 1.0).log_prob(z[k])) for k in self.attention_shapes())
        kd = None
        if self.data:
            ph = self._phi(z, args, "train")
            kd = KernelData(ph, ph, None)
        if self.limit == "finite":
            xi = {k: z[k] for k in self.layout.site_names}
            chain, likelihood = exact_log_prior_and_likelihood(self.layout, xi, args.hyper, kd, args.y)
            return prior + chain, likelihood
        if kd is None:
            return prior, jnp.zeros_like(prior)
        return prior, gaussian_log_marginal(apply_kernel(kd, self.gp_U(args)), args.y, args.hyper.temperature)

    def derived(self, z, args, store_weights=False):
        inp = args.inputs
        out = {}
        if self.limit == "finite":
            U_a, Us, _ = self.layout.unpack({k: z[k] for k in self.layout.site_names}, args.hyper)
            U = Us[0]
            out.update(U_a=U_a, **{f"U_{l}": U_l for l, U_l in enumerate(Us[1:], start=2)})
        else:
            U = self.gp_U(args)
        ph_tr, ph_te = self._phi(z, args, "train"), self._phi(z, args, "test")
        pk = PathKernels(KernelData(ph_tr, ph_tr, None), KernelData(ph_tr, ph_te, None), ph_te)
        mean, var = predictive(U, pk, args.y, args.hyper.temperature)
        out.update(U=U, f=mean, f_var=var)
        maps = attention_maps(z, self.heads, inp.scale, inp.xa_test[: self.n_maps])
        out.update({f"attention_{l}": a for l, a in enumerate(maps, start=1)})
        if store_weights:
            out.update({k: inp.scale * z[k] for k in self.attention_shapes()})
        return out


@dataclass(frozen=True)
class AttentionWeightsModel(AttentionModel):
    """The second route to the same posterior (``model.kind = "attention_weights"``): every weight sampled,
    ``V^(0)``, the value matrices and the readout (non-centred sites of
    :func:`~bayes_attn.inference.models.weight_shapes`) with the queries and keys, and ``y ~ N(f(x), T)``
    (docs/theory.md eq. (3b)) with the path inputs of the sampled attention.  Finite width only.  Stores
    ``f`` (the network's own output, not a conditional mean), ``U = U_1(W)`` and the attention maps."""

    n0: int = 1
    widths: tuple[int, ...] = ()

    kind = "attention_weights"

    def site_shapes(self):
        return {**self.attention_shapes(), **weight_shapes(self.heads, self.n0, self.widths, collapsed=False)}

    def _xpi(self, z, args: ModelArgs, split: str):
        inp = args.inputs
        xa, x = (inp.xa_train, inp.x_train) if split == "train" else (inp.xa_test, inp.x_test)
        return path_inputs(x, attention_paths(z, self.heads, inp.scale, xa, self.readout))

    def numpyro_model(self, args: ModelArgs):
        z = {
            name: numpyro.sample(name, dist.Normal(0.0, 1.0).expand(shape).to_event(len(shape)))
            for name, shape in self.site_shapes().items()
        }
        V0, values, a = weights_from_latent(args.hyper.variances, z, len(self.heads))
        f = forward_paths(self._xpi(z, args, "train"), V0, effective_weights(values, a))
        numpyro.sample("y", dist.Normal(f, jnp.sqrt(args.hyper.temperature)), obs=args.y)

    def derived(self, z, args, store_weights=False):
        inp = args.inputs
        V0, values, a = weights_from_latent(args.hyper.variances, z, len(self.heads))
        w_eff = effective_weights(values, a)
        out = {"f": forward_paths(self._xpi(z, args, "test"), V0, w_eff), "U": gram(w_eff)}
        maps = attention_maps(z, self.heads, inp.scale, inp.xa_test[: self.n_maps])
        out.update({f"attention_{l}": m for l, m in enumerate(maps, start=1)})
        if store_weights:
            out.update({k: inp.scale * z[k] for k in self.attention_shapes()})
        return out


def attention_inputs(task, basis, scale: float | None) -> tuple[AttentionInputs, float]:
    """The traced inputs and the resolved prior scale (``scale``, or :func:`default_attention_scale`)."""
    x_tr, x_te = jnp.asarray(task.x_train, jnp.float64), jnp.asarray(task.x_test, jnp.float64)
    B = None if basis is None else jnp.asarray(basis, jnp.float64)
    xa_tr, xa_te = (x_tr, x_te) if B is None else (x_tr @ B, x_te @ B)
    s = default_attention_scale(xa_tr) if scale is None else float(scale)
    return AttentionInputs(x_tr, x_te, xa_tr, xa_te, jnp.asarray(s, jnp.float64)), s


def attention_dimension(task, rank: int, basis) -> int:
    """The attention dimension ``m`` after checking the options against the data (one line naming the field;
    the options on their own are checked by :func:`bayes_attn.config.check_attention_options`): ``rank`` at most
    ``m``; ``basis`` ``(n0, m)`` of full column rank; no layer with user-supplied attention arrays or hardmax
    (nothing to learn)."""
    from ...theory import attention_params, check_basis

    attention_params(task)  # refuses fixed attention arrays and hardmax heads, naming them
    m = task.n0
    if basis is not None:
        with renamed({"basis": "model.basis"}):
            m = int(check_basis(basis, task.n0).shape[1])
    require(
        rank <= m,
        "model.rank",
        f"must be at most the attention's dimension {m} "
        f"({'basis columns' if basis is not None else 'token dimension n0'}), got {rank}",
    )
    return m


def prior_positions(model: AttentionModel, spec, chains: int, seed: int) -> dict:
    """Independent prior draws of every site, one per chain (the default start of this model).

    ``z_Q``, ``z_K`` (and every weight site of ``"attention_weights"``): standard normal.  Order parameters: ``U_a = sigma_a^2 chi^2_{N_a} / N_a`` and
    ``U_l = C_l (G G^T / N_l) C_l^T`` with ``G`` a ``(p_l, N_l)`` standard-normal matrix (the Wishart chain of
    eq. (5.2a), drawn exactly at integer widths), mapped to the sites by ``OrderParameterLayout.pack``.
    """
    key = jax.random.fold_in(jax.random.PRNGKey(seed), 0x5A7)  # apart from the chains' iteration keys
    k_att, k_op = jax.random.split(key)
    shapes = model.site_shapes() if isinstance(model, AttentionWeightsModel) else model.attention_shapes()
    keys = jax.random.split(k_att, len(shapes))
    out = {name: jax.random.normal(k, (chains, *shape), jnp.float64) for k, (name, shape) in zip(keys, shapes.items())}
    if model.limit != "finite" or isinstance(model, AttentionWeightsModel):
        return out
    hyper, layout = spec.hyper(), model.layout
    widths = [int(N) for N in spec.widths]  # (N_1, ..., N_L, N_a): integers, the number of Gaussian columns
    k_a, *k_l = jax.random.split(k_op, 1 + layout.n_layers)
    g_a = jax.random.normal(k_a, (chains, widths[-1]), jnp.float64)
    G = [jax.random.normal(k, (chains, p, N), jnp.float64) for k, p, N in zip(k_l, layout.sizes, widths)]

    def one(g_a, G):
        U_a = hyper.sigma2_readout * jnp.sum(g_a**2) / widths[-1]  # sigma_a^2 chi^2_{N_a} / N_a
        Us, U_next = [None] * layout.n_layers, U_a.reshape(1, 1)
        for l in range(layout.n_layers, 0, -1):
            C = layout.scale_factor(l, U_next, hyper)
            U_next = Us[l - 1] = C @ (G[l - 1] @ G[l - 1].T / widths[l - 1]) @ C.T
        return layout.pack(U_a, Us, hyper)

    out.update(jax.vmap(one)(g_a, G))
    return out


__all__ = [
    "AttentionModel",
    "AttentionWeightsModel",
    "AttentionInputs",
    "N_MAPS",
    "attention_inputs",
    "attention_maps",
    "attention_phi",
    "attention_dimension",
    "default_attention_scale",
    "prior_positions",
]
