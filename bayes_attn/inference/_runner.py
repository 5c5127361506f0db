"""The chain runner: every sampler's :class:`~bayes_attn.inference.samplers.Program`, chunked,
checkpointed, resumable, with a progress bar.

Named parts:

* :func:`chain_keys`: one key per chain from the seed; iteration ``t`` of a chain (warm-up
  ``0..W-1``, then the sampling iterations ``W, W+1, ...``) uses ``fold_in(chain_key, t)``, so the
  draws never depend on how the run was chunked;
* :func:`compiled`: the compiled chunk programs, cached by (sampler, model, settings, chunk length):
  the model's data, widths, temperature and seed are traced arguments, so every run with the same
  shapes reuses them (a sweep compiles once per shape and worker).  The number of iterations a chunk
  runs is traced too, and every sampler's warm-up step is its sampling step (``Program.step``), so a run
  compiles one chunk program for warm-up and sampling (plus init and end of warm-up, which run once and are
  compiled without LLVM's optimisations: :data:`ONE_OFF_COMPILER_OPTIONS`), however its iterations fall
  into chunks.  With the chains on one device the chunk programs are also kept on disk
  (:func:`bayes_attn._programs.disk_jit`), so a later process neither traces nor lowers them, and a run compiles
  its start, chunk and end-of-warm-up programs together before the start runs, on a borrowed idle core where
  the process may have one (:func:`_compile_ahead`);
* :class:`Schedule`: warm-up, discarded and kept iterations and the chunk grid;
* :mod:`._checkpoint`: checkpoint I/O; :func:`run_chains`: the loop that ties them together,
  with the progress bar and the optional stop after ``stop_after_chunks`` chunks.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import time
import warnings
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from .._cpus import borrowed_cpu
from .._programs import disk_jit, options_jit
from . import _checkpoint
from ._devices import run_layout, shard_chains
from .samplers import SAMPLERS


class SamplingInterrupted(RuntimeError):
    """Raised when a run stops early on request; the checkpoint holds its progress."""


#: how a thinning block's statistics ``x`` (iterations first) are summarised; ``last``: the block's last iteration
#: that ran (a partial block at the end of warm-up stops early)
_REDUCE = {"sum": lambda x, last: x.sum(axis=0), "any": lambda x, last: x.any(axis=0), "last": lambda x, last: x[last]}


class Schedule(NamedTuple):
    """Iterations of a run: ``warmup``, then ``skip = draws % thin`` discarded, then ``n_keep`` blocks of
    ``thin`` iterations (the last of each kept); chunks of ``per_chunk`` kept draws (warm-up chunks:
    ``per_chunk * thin`` iterations)."""

    warmup: int
    skip: int
    n_keep: int
    thin: int
    per_chunk: int

    @classmethod
    def from_config(cls, cfg) -> "Schedule":
        return cls(cfg.warmup, cfg.draws % cfg.thinning, cfg.draws // cfg.thinning, cfg.thinning, cfg.checkpoint_every)

    @property
    def total(self) -> int:
        return self.warmup + self.skip + self.n_keep * self.thin


def chain_keys(seed: int, chains: int):
    """``(per-chain keys, end-of-warm-up keys)``: ``split(PRNGKey(seed), chains)`` as NumPyro's ``MCMC``
    does (a chain's start uses its key itself, iteration ``t`` uses ``fold_in(key, t)``, the end of
    warm-up ``fold_in(key, 2^31 - 2)``)."""
    return _split_chain_keys(jax.random.PRNGKey(seed), chains)


@functools.partial(jax.jit, static_argnums=1)
def _split_chain_keys(key, chains: int):
    # one compiled program, not the two that the calls compile one by one in every process (the seed's key is
    # made outside: a seed beyond 32 bits is not a valid traced argument while a float32 run turns x64 off)
    keys = jax.random.split(key, chains)
    return keys, jax.vmap(lambda k: jax.random.fold_in(k, 2**31 - 2))(keys)


@functools.lru_cache(maxsize=None)
def _program(sampler: str, model, settings):
    return SAMPLERS[sampler].program(model, settings)


def _zeros(shapes):
    return jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), shapes)


@functools.lru_cache(maxsize=None)
def compiled(sampler: str, model, settings, store_weights: bool, layout, part: str, n: int = 0, thin: int = 1):
    """The mapped, compiled chunk function ``part`` of a sampler's program (cached; see module docstring),
    its chains laid out as ``layout`` (:func:`~bayes_attn.inference.chain_layout`) says.

    * ``"init"``: ``(keys, positions, args, inverse_mass_matrix) -> carry``;
    * ``"end"``: ``(carry, keys, args) -> carry``;
    * ``"draw"``: up to ``n`` blocks of ``thin`` sampling iterations, ``(carry, keys, t0, n_iter, store, args) ->
      (carry, (derived, stats))``: iteration ``t0 + i`` runs for ``i < n_iter`` (a **traced** count, so the
      last, partial chunk, the iterations discarded before thinning and every warm-up chunk reuse this one
      program); the derived quantities of block ``j`` are computed when ``store`` and the block ran (a skipped
      block gives zeros, which the caller drops); a block's statistics are reduced over the iterations that ran
      in it.

    The conditions are on values shared by all chains, so under ``vmap`` they stay branches (a skipped
    iteration costs nothing).
    """
    fn = _chunk_program(sampler, model, settings, store_weights, layout, part, n, thin)
    options = ONE_OFF_COMPILER_OPTIONS if part in ("init", "end") else None
    if layout.devices > 1:  # a program read from disk runs on one device (bayes_attn._programs)
        return options_jit(fn, options)
    key = f"{sampler}|{type(model).__module__}.{model!r}|{settings!r}|{store_weights}|{layout!r}|{part}|{n}|{thin}"
    return disk_jit(fn, f"{key}|{_kernel_libraries()}", compiler_options=options)


#: XLA options for the programs a run calls once (``init``, ``end``) *(project choice)*: without LLVM's optimisation
#: passes they compile in a third to a fifth of the time (each ``jax.random`` call's unrolled hash is the costly
#: part), and their run time, a few milliseconds to a second once per run, is far below what that saves
#: (docs/design.md, "Profile and floor")
ONE_OFF_COMPILER_OPTIONS = {"xla_backend_optimization_level": 0}


@functools.lru_cache(maxsize=1)
def _kernel_libraries() -> str:
    """The versions of the libraries whose kernels the chunk programs trace (an upgrade must not load a program
    traced from the old code; the package's own source and JAX's version are in every disk key already)."""
    from importlib.metadata import version

    return f"numpyro {version('numpyro')} blackjax {version('blackjax')}"


def _chunk_program(sampler: str, model, settings, store_weights: bool, layout, part: str, n: int, thin: int):
    prog = _program(sampler, model, settings)
    if part == "init":
        return shard_chains(lambda key, pos, args, imm: prog.init(key, args, pos, imm), layout, 2, 2)
    if part == "end":
        return shard_chains(lambda c, key, args: prog.end_warmup(key, c, args), layout, 2, 1)
    # per-chain pieces as jitted functions: their shapes (for the skipped branches) come from the same trace
    step = jax.jit(prog.step)
    derive = jax.jit(lambda c, args: dict(model.derived(prog.position(c, args), args, store_weights)))

    def loop(carry, key, t0, n_iter, store, args):
        def one(c, i):
            k = jax.random.fold_in(key, t0 + i)
            zeros = _zeros(jax.eval_shape(step, k, c, args)[1])
            return jax.lax.cond(i < n_iter, lambda c: step(k, c, args), lambda c: (c, zeros), c)

        def block(c, j):
            c, st = jax.lax.scan(one, c, j * thin + jnp.arange(thin))
            last = jnp.clip(n_iter - 1 - j * thin, 0, thin - 1)
            st = {k: _REDUCE[prog.reduce.get(k, "last")](v, last) for k, v in st.items()}
            blank = _zeros(jax.eval_shape(derive, c, args))
            d = jax.lax.cond(store & (j * thin < n_iter), lambda c: derive(c, args), lambda c: blank, c)
            return c, (d, st)

        return jax.lax.scan(block, carry, jnp.arange(n))

    return shard_chains(loop, layout, 2, 4)


def _append(store: dict, new: dict, n: int) -> None:
    """Append the first ``n`` draws of each ``(chain, draw, ...)`` array of ``new`` to ``store``."""
    for k, v in new.items():
        v = np.asarray(v)[:, :n]
        store[k] = np.concatenate([store[k], v], axis=1) if k in store else v


@contextlib.contextmanager
def precision(name: str):
    """Context in which a run of ``[sampler] precision = name`` traces and runs its programs.

    ``"float32"``: JAX's x64 mode is off inside (so the constants NumPyro and our models create follow
    the 32-bit arrays instead of promoting them back to float64) and JAX's warnings about explicitly
    requested 64-bit dtypes (integer statistics) are silenced; x64 stays on everywhere else.
    """
    if name == "float64":
        yield
        return
    with jax.enable_x64(False), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Explicitly requested dtype", category=UserWarning)
        yield


def cast(tree, name: str):
    """``tree`` with its floating arrays in precision ``name`` (``None`` leaves stay ``None``)."""
    if name == "float64" or tree is None:
        return tree
    dt = np.dtype(name)
    return jax.tree.map(lambda a: np.asarray(a, dt) if np.issubdtype(np.asarray(a).dtype, np.floating) else a, tree)


#: what a run returns: ArviZ group name -> ``{name: (chain, draw, ...) array}`` (``warmup_posterior`` stays empty
#: unless ``cfg.save_warmup``)
GROUPS = ("posterior", "sample_stats", "warmup_sample_stats", "warmup_posterior")


def run_chains(
    sampler: str,
    model,
    args,
    cfg,
    settings,
    *,
    fp: str,
    positions=None,
    inverse_mass_matrix=None,
    checkpoint=None,
    resume: bool = False,
    stop_after_chunks: int | None = None,
    timings: dict | None = None,
):
    """Run ``cfg.chains`` chains; return a dict ``{group: {name: (chain, draw, ...) array}}`` of :data:`GROUPS`.

    Warm-up statistics (``warmup_sample_stats``) are always kept, per thinning block like the draws (so
    ``n_steps`` summed over them counts every gradient of the run); the warm-up draws' derived quantities
    (``warmup_posterior``) only with ``cfg.save_warmup``.
    ``positions``: per-chain starting sites (leading chain axis) or ``None`` (the sampler's default);
    ``checkpoint``: file written after every chunk; with ``resume`` the run continues from it (the
    same draws as an uninterrupted run).  ``stop_after_chunks``: raise :class:`SamplingInterrupted`
    after that many chunks (time-sliced runs, tests).  ``timings``: a dict to which the wall time of each
    phase (``init``, ``warmup``, ``end``, ``sample``; compilation included) is added.  The chains are laid out over devices as
    ``cfg.chain_method`` and ``cfg.devices`` say (:func:`~bayes_attn.inference.chain_layout`); the run's
    arrays and programs are in ``cfg.precision`` (:func:`precision`).
    """
    layout = run_layout(sampler, cfg)
    with precision(cfg.precision):
        return _run(
            sampler,
            model,
            cast(args, cfg.precision),
            cfg,
            settings,
            layout,
            fp,
            cast(positions, cfg.precision),
            cast(inverse_mass_matrix, cfg.precision),
            checkpoint,
            resume,
            stop_after_chunks,
            timings,
        )


def _run(
    sampler,
    model,
    args,
    cfg,
    settings,
    layout,
    fp,
    positions,
    inverse_mass_matrix,
    checkpoint,
    resume,
    stop_after_chunks,
    timings,
):
    sch = Schedule.from_config(cfg)
    part = functools.partial(compiled, sampler, model, settings, cfg.store_weights, layout)
    # one chunk program per run for warm-up and sampling, whatever the chunk lengths (module docstring)
    draw = part("draw", sch.per_chunk, sch.thin)
    keys, end_keys = chain_keys(cfg.seed, cfg.chains)
    imm = None if inverse_mass_matrix is None else jnp.asarray(inverse_mass_matrix)
    ck = Path(checkpoint) if checkpoint is not None else None
    done = {"warm": 0, "ended": False, "skipped": 0, "kept": 0}
    groups = {g: {} for g in GROUPS}
    clock = _Clock(timings)
    writer = None if ck is None else _checkpoint.Writer(ck)
    init, end = part("init"), part("end")
    if resume and ck is not None and ck.is_file():
        like = jax.eval_shape(init, keys, positions, args, imm)
        meta, carry, groups = _checkpoint.load(ck, like, fp, GROUPS)
        done = {k: meta[k] for k in done}
        writer = _checkpoint.Writer(ck, meta["parts"], meta["lengths"])
        ahead = [(draw, (carry, keys, 0, 0, False, args))]  # the restored carry's own types
        if not done["ended"]:
            ahead.append((end, (carry, end_keys, args)))
        with clock("warmup" if done["warm"] < sch.warmup else "sample"):
            _compile_ahead(layout, *ahead)
    else:
        with clock("init"):
            like = init.prepare(keys, positions, args, imm) if layout.devices == 1 else None
            if like is not None:
                _compile_ahead(
                    layout,
                    (init, (keys, positions, args, imm)),
                    (draw, (like, keys, 0, 0, False, args)),
                    (end, (like, end_keys, args)),
                )
            carry = jax.block_until_ready(init(keys, positions, args, imm))

    bar = tqdm(
        total=sch.total,
        initial=done["warm"] + done["skipped"] + done["kept"] * sch.thin,
        disable=not cfg.progress_bar,
        dynamic_ncols=True,
        desc=f"{sampler} {'warmup' if done['warm'] < sch.warmup else 'sample'}",
    )
    chunks = 0

    def after_chunk():
        nonlocal chunks
        if writer is not None:  # writes the draws stored since the last checkpoint, then the state
            writer.save({"fingerprint": fp, **done}, carry, groups)
        chunks += 1
        if stop_after_chunks is not None and chunks >= stop_after_chunks and done["kept"] < sch.n_keep:
            bar.close()
            raise SamplingInterrupted(f"stopped after {chunks} chunk(s); resume from {ck}")

    try:
        while done["warm"] < sch.warmup:
            n = min(sch.per_chunk * sch.thin, sch.warmup - done["warm"])
            # block: JAX dispatches CPU work asynchronously, so without a wait the bar showed warm-up done in
            # seconds and charged its work to the first batch of draws (1.6x per draw in the digits runs)
            with clock("warmup"):
                carry, (d, st) = jax.block_until_ready(draw(carry, keys, done["warm"], n, cfg.save_warmup, args))
            blocks = -(-n // sch.thin)  # warm-up statistics per thinning block, like the draws
            _append(groups["warmup_sample_stats"], st, blocks)
            if cfg.save_warmup:
                _append(groups["warmup_posterior"], d, blocks)
            done["warm"] += n
            bar.update(n)
            after_chunk()
        if not done["ended"]:  # fix what warm-up tuned (a resume from the last warm-up checkpoint redoes this)
            with clock("end"):
                carry, done["ended"] = jax.block_until_ready(end(carry, end_keys, args)), True
            bar.set_description(f"{sampler} sample")
        t_sample = sch.warmup
        if done["skipped"] < sch.skip:
            with clock("sample"):
                carry = jax.block_until_ready(draw(carry, keys, t_sample, sch.skip, False, args)[0])
            done["skipped"] = sch.skip
            bar.update(sch.skip)
            after_chunk()
        t_sample += sch.skip
        while done["kept"] < sch.n_keep:
            n = min(sch.per_chunk, sch.n_keep - done["kept"])
            with clock("sample"):
                carry, (d, st) = jax.block_until_ready(
                    draw(carry, keys, t_sample + done["kept"] * sch.thin, n * sch.thin, True, args)
                )
            _append(groups["posterior"], d, n)
            _append(groups["sample_stats"], st, n)
            done["kept"] += n
            bar.update(n * sch.thin)
            stats = groups["sample_stats"]
            if "acceptance_rate" in stats:
                bar.set_postfix(accept=f"{stats['acceptance_rate'].mean():.2f}")
            after_chunk()
    finally:
        bar.close()
    return groups


def _compile_ahead(layout, *calls) -> None:
    """Compile the programs of a run's first calls, ``(program, arguments)`` pairs, before any of them runs, on
    a core borrowed for the purpose where one is idle (docs/design.md, "Compiling on a borrowed core").

    XLA compiles each program on a pool of threads: on a process pinned to one claimed core (the command
    line's default) they share that core, so a cold run compiled its start, chunk and end-of-warm-up programs
    one after another on one core while the machine's other cores idled.  They are compiled here with the
    process allowed one more idle core for that while (:func:`bayes_attn._cpus.borrowed_cpu`), and the calls
    then use them: the same programs, argument types and options as the calls would have compiled, so the
    draws are the same.  With a borrowed core the compilations run on a thread, in order, while this thread traces
    and lowers the next program (XLA compiles outside Python's lock); without one (sweep and test workers) every
    program is traced, then compiled, as before: one core would only take turns *(project choice, docs/design.md)*.
    Nothing is done for chains over several devices; a program the disk cache cannot serve waits for its first call.
    """
    if layout.devices > 1:
        return
    with borrowed_cpu() as cpu:
        if cpu is None:
            ready = [(program, arguments) for program, arguments in calls if program.prepare(*arguments) is not None]
            for program, arguments in ready:
                program.compile_ahead(*arguments)
            return
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="compile-ahead") as pool:
            pending = [
                pool.submit(program.compile_ahead, *arguments)
                for program, arguments in calls
                if program.prepare(*arguments) is not None
            ]
            for future in pending:
                future.result()


class _Clock:
    """Adds the wall time of each ``with clock(phase):`` block to ``timings[phase]`` (no-op without a dict) and,
    when ``timings["windows"]`` is a list, appends ``(phase, start, end)`` in :func:`time.perf_counter` seconds
    (the profile attributes JAX's compile events to phases with them)."""

    def __init__(self, timings: dict | None):
        self.timings = timings

    @contextlib.contextmanager
    def __call__(self, phase: str):
        if self.timings is None:
            yield
            return
        t0 = time.perf_counter()
        try:
            yield
        finally:
            t1 = time.perf_counter()
            self.timings[phase] = self.timings.get(phase, 0.0) + t1 - t0
            if isinstance(self.timings.get("windows"), list):
                self.timings["windows"].append((phase, t0, t1))


__all__ = ["run_chains", "GROUPS", "precision", "cast", "compiled", "chain_keys", "Schedule", "SamplingInterrupted"]
