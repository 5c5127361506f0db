"""Chunked chain runner for the custom kernels (MALA, ULA, Gibbs): parallel chains,
warm-up, thinning, per-draw derived quantities, progress bar and exact checkpoint/resume.

A sampler is a :class:`Program` of pure per-chain functions.  The runner

* derives one key per chain from ``seed`` and the key of iteration ``t`` as
  ``fold_in(chain_key, t)``, so the draws never depend on how the run was chunked;
* runs ``checkpoint_every`` stored draws (``x thinning`` iterations) per chunk, chains mapped
  as ``cfg.chain_method`` says (:func:`~bayes_attn.inference.chain_method`: ``jax.vmap`` on CPU
  by default, ``jax.pmap`` over devices on accelerators, ``lax.map`` for "sequential");
* after every chunk, writes the carried state (bit-exact float64 / key arrays) and the draws
  so far to the checkpoint file, atomically.  Resuming loads them and continues on the same
  chunk grid: the resumed run returns the **same** draws as an uninterrupted one.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
from pathlib import Path
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from .._errors import InputError
from ._config import SamplerConfig
from ._devices import chain_method


class Program(NamedTuple):
    """Per-chain pure functions of a sampler.

    ``init(key) -> carry``; ``warmup_step(key, carry) -> carry``;
    ``end_warmup(key, carry) -> carry`` (fix the step size); ``sample_step(key, carry) ->
    (carry, stats)``; ``position(carry) -> dict`` of model sites for ``derived``;
    ``reduce``: per stat, how a thinning block is summarised (``"sum"``, ``"any"``, ``"last"``).
    """

    init: Callable
    warmup_step: Callable
    end_warmup: Callable
    sample_step: Callable
    position: Callable
    reduce: dict


class SamplingInterrupted(RuntimeError):
    """Raised when a run stops early on request; the checkpoint holds its progress."""


_REDUCE = {"sum": lambda x: x.sum(axis=0), "any": lambda x: x.any(axis=0), "last": lambda x: x[-1]}


def fingerprint(cfg: SamplerConfig, spec, arrays) -> str:
    """Hash of everything that determines the draws (config, network, data)."""
    h = hashlib.sha256()
    fields = {k: v for k, v in vars(cfg).items() if k != "progress_bar"}
    h.update(json.dumps(fields, sort_keys=True, default=str).encode())
    h.update(repr(spec).encode())
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a)).tobytes())
    return h.hexdigest()


def _save(path: Path, meta: dict, carry, post: dict, stats: dict) -> None:
    leaves = jax.tree_util.tree_leaves(carry)
    arrays = {f"carry_{i}": np.asarray(x) for i, x in enumerate(leaves)}
    arrays.update({f"post__{k}": v for k, v in post.items()})
    arrays.update({f"stat__{k}": v for k, v in stats.items()})
    buf = io.BytesIO()
    np.savez(buf, meta=np.array(json.dumps(meta)), **arrays)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, path)


def _load(path: Path, carry_like, fp: str):
    with np.load(path) as f:
        meta = json.loads(str(f["meta"]))
        if meta.get("fingerprint") != fp:
            raise InputError(f"resume: checkpoint {str(path)!r} was written by a different config, "
                             "network or data set")
        treedef = jax.tree_util.tree_structure(carry_like)
        carry = jax.tree_util.tree_unflatten(treedef, [f[f"carry_{i}"] for i in range(treedef.num_leaves)])
        post = {k[6:]: f[k] for k in f.files if k.startswith("post__")}
        stats = {k[6:]: f[k] for k in f.files if k.startswith("stat__")}
    return meta, carry, post, stats


def _mapper(chains: int, requested: str):
    """Map a per-chain ``fn(carry, key, static)`` over the chain axis as ``chain_method`` decides."""
    method = chain_method(chains, requested)
    if method == "parallel":
        return lambda fn: jax.pmap(fn, in_axes=(0, 0, None))
    if method == "sequential":
        return lambda fn: jax.jit(lambda c, k, s: jax.lax.map(lambda ck: fn(ck[0], ck[1], s), (c, k)))
    return lambda fn: jax.jit(jax.vmap(fn, in_axes=(0, 0, None)))


def run_program(program: Program, derived: Callable, cfg: SamplerConfig, *, fp: str,
                checkpoint=None, resume: bool = False, stop_after_chunks: int | None = None):
    """Run ``cfg.chains`` chains of ``program``; return ``(posterior, sample_stats)``.

    ``derived(position) -> dict`` is stored at every kept draw.  ``checkpoint``: file written
    after each chunk; with ``resume`` the run continues from it.  ``stop_after_chunks``: raise
    :class:`SamplingInterrupted` after that many chunks (time-sliced runs, tests).
    """
    C, thin, W = cfg.chains, cfg.thinning, cfg.warmup
    n_keep = cfg.draws // thin
    per_chunk = cfg.checkpoint_every
    mapper = _mapper(C, cfg.chain_method)
    chain_keys = jax.random.split(jax.random.PRNGKey(cfg.seed), C)
    init_keys = jax.vmap(lambda k: jax.random.fold_in(k, 2**31 - 1))(chain_keys)
    end_keys = jax.vmap(lambda k: jax.random.fold_in(k, 2**31 - 2))(chain_keys)

    @functools.cache
    def warm_fn(n):
        def fn(carry, key, t0):
            def body(c, i):
                return program.warmup_step(jax.random.fold_in(key, t0 + i), c), None
            return jax.lax.scan(body, carry, jnp.arange(n))[0]
        return mapper(fn)

    @functools.cache
    def draw_fn(n):
        def fn(carry, key, t0):
            def inner(c, i):
                return program.sample_step(jax.random.fold_in(key, t0 + i), c)

            def outer(c, j):
                c, st = jax.lax.scan(inner, c, j * thin + jnp.arange(thin))
                st = {k: _REDUCE[program.reduce.get(k, "last")](v) for k, v in st.items()}
                return c, (dict(derived(program.position(c))), st)
            return jax.lax.scan(outer, carry, jnp.arange(n))
        return mapper(fn)

    end_fn = mapper(lambda carry, key, _: program.end_warmup(key, carry))
    ck = Path(checkpoint) if checkpoint is not None else None
    t_warm, kept, ended, post, stats = 0, 0, False, {}, {}
    if resume and ck is not None and ck.is_file():  # the carry's structure without running init
        meta, carry, post, stats = _load(ck, jax.eval_shape(jax.vmap(program.init), init_keys), fp)
        t_warm, kept, ended = meta["t_warm"], meta["kept"], meta["ended"]
    else:
        carry = jax.jit(jax.vmap(program.init))(init_keys)

    bar = tqdm(total=W + n_keep * thin, initial=t_warm + kept * thin, disable=not cfg.progress_bar,
               desc=f"{cfg.kind} warmup" if t_warm < W else f"{cfg.kind} sample", dynamic_ncols=True)
    chunks = 0

    def after_chunk():
        nonlocal chunks
        if ck is not None:
            _save(ck, {"fingerprint": fp, "t_warm": t_warm, "kept": kept, "ended": ended}, carry, post, stats)
        chunks += 1
        if stop_after_chunks is not None and chunks >= stop_after_chunks and kept < n_keep:
            bar.close()
            raise SamplingInterrupted(f"stopped after {chunks} chunk(s); resume from {ck}")

    try:
        while t_warm < W:
            n = min(per_chunk * thin, W - t_warm)
            carry = warm_fn(n)(carry, chain_keys, t_warm)
            t_warm += n
            if t_warm == W:
                carry, ended = end_fn(carry, end_keys, 0), True
                bar.set_description(f"{cfg.kind} sample")
            bar.update(n)
            after_chunk()
        if not ended:  # no warm-up at all
            carry, ended = end_fn(carry, end_keys, 0), True
        while kept < n_keep:
            n = min(per_chunk, n_keep - kept)
            carry, (d, st) = draw_fn(n)(carry, chain_keys, kept * thin)
            for k, v in d.items():
                post[k] = np.concatenate([post[k], np.asarray(v)], axis=1) if k in post else np.asarray(v)
            for k, v in st.items():
                stats[k] = np.concatenate([stats[k], np.asarray(v)], axis=1) if k in stats else np.asarray(v)
            kept += n
            bar.update(n * thin)
            if "acceptance_rate" in stats:
                bar.set_postfix(accept=f"{stats['acceptance_rate'].mean():.2f}")
            after_chunk()
    finally:
        bar.close()
    return post, stats


__all__ = ["Program", "run_program", "SamplingInterrupted", "fingerprint"]


def chunked_runner(make_program: Callable, name: str):
    """Wrap ``make_program(built, cfg) -> Program`` as a driver runner
    ``runner(built, cfg, *, checkpoint=None, resume=False, stop_after_chunks=None)``."""
    from ._nuts import _postprocess  # derived quantities (+ weights on request), as for NUTS

    def runner(built, cfg: SamplerConfig, *, checkpoint=None, resume=False, stop_after_chunks=None):
        fp = fingerprint(cfg, built.spec, (built.data.xpi_train, built.data.xpi_test, built.data.y,
                                           np.array([built.collapsed])))
        return run_program(make_program(built, cfg), _postprocess(built, cfg.store_weights), cfg, fp=fp,
                           checkpoint=checkpoint, resume=resume, stop_after_chunks=stop_after_chunks)

    runner.chunked = True
    runner.__name__ = runner.__qualname__ = name
    runner.__doc__ = f"Run ``{name}`` chunked; return ``(posterior, sample_stats)`` of ``(chain, draw, ...)`` arrays."
    return runner


__all__ += ["chunked_runner"]
