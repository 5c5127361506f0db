"""bayes_attn._programs: traced programs kept on disk.  A second process calls the program without tracing the
Python function again, with the same numbers as jax.jit; what the disk cache cannot serve falls back to jax.jit."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_attn import _programs
from bayes_attn._programs import disk_jit, program_dir

from conftest import subprocess_env

#: a module whose disk_jit function counts how often its Python body runs (= how often it is traced)
MODULE = """
import jax.numpy as jnp
from bayes_attn._programs import disk_jit

TRACES = []

@disk_jit
def energy(x, pair):
    TRACES.append(1)
    a, b = pair
    return {"e": jnp.sum(jnp.sin(x) * a) + b, "g": jnp.cos(x) * a}
"""

CALL = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import counted
out = counted.energy(np.linspace(0.0, 1.0, 5), (2.0, np.float64(0.5)))
print(json.dumps({"traces": len(counted.TRACES), "e": float(out["e"]), "g": np.asarray(out["g"]).tolist()}))
"""


def _run(folder, cache):
    env = subprocess_env(BAYES_ATTN_CACHE_DIR=str(cache))
    proc = subprocess.run(
        [sys.executable, "-c", CALL, str(folder)], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    import json

    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_second_process_calls_the_program_without_tracing(tmp_path):
    (tmp_path / "counted.py").write_text(MODULE)
    cache = tmp_path / "cache"
    first, second = _run(tmp_path, cache), _run(tmp_path, cache)
    assert first["traces"] == 1 and second["traces"] == 0  # the second process never ran the Python body
    x = np.linspace(0.0, 1.0, 5)
    assert first["e"] == second["e"] == pytest.approx(float(np.sum(np.sin(x) * 2.0) + 0.5), rel=1e-15)
    assert first["g"] == second["g"]
    assert len(list((cache / "exported").glob("*.bin"))) == 1
    # a corrupt file is replaced: the next process exports (traces) again and gets the same numbers
    (path,) = (cache / "exported").glob("*.bin")
    path.write_bytes(b"not a program")
    third = _run(tmp_path, cache)
    assert third["traces"] == 1 and third["e"] == first["e"]
    assert path.read_bytes() != b"not a program"


def _f(x, scale):
    return jnp.tanh(x) * scale + jnp.sum(x**2)


@pytest.fixture
def jax_events():
    """``(traced, compiled)``: the names of the functions JAX traces to a jaxpr and of the programs XLA compiles
    while the test runs (JAX's monitoring events; the listener is removed afterwards)."""
    from jax import monitoring

    traced, compiled = [], []

    def listener(event, duration, **kw):
        if event.endswith("jaxpr_trace_duration"):
            traced.append(kw.get("fun_name"))
        elif event.endswith("backend_compile_duration"):
            compiled.append(kw.get("fun_name"))

    monitoring.register_event_duration_secs_listener(listener)
    yield traced, compiled
    monitoring.unregister_event_duration_listener(listener)


def test_same_numbers_as_jit_and_tracers_fall_back(monkeypatch, tmp_path):
    monkeypatch.setenv("BAYES_ATTN_CACHE_DIR", str(tmp_path))
    f = disk_jit(_f)
    x = jnp.linspace(-1.0, 2.0, 7)
    assert np.array_equal(f(x, 1.5), jax.jit(_f)(x, 1.5))
    assert len(list(program_dir().glob("*.bin"))) == 1
    # inside other transformations the arguments are tracers: the plain jit serves them
    xs = jnp.stack([x, 2 * x])
    assert np.allclose(jax.vmap(f, in_axes=(0, None))(xs, 1.5), jax.vmap(_f, in_axes=(0, None))(xs, 1.5))
    assert np.allclose(jax.grad(lambda v: f(v, 1.5).sum())(x), jax.grad(lambda v: _f(v, 1.5).sum())(x))
    assert len(list(program_dir().glob("*.bin"))) == 1  # nothing exported for the traced calls
    f(jnp.ones(3), 1.5)  # another shape: another program
    assert len(list(program_dir().glob("*.bin"))) == 2


def test_outputs_are_uncommitted_so_their_consumers_compile_once(monkeypatch, tmp_path, jax_events):
    """A program read from disk returns uncommitted arrays, as jax.jit does for host inputs: a jitted function fed
    first a host array and then that program's output (the same type) compiles once, not once per commitment."""
    compiles = jax_events[1]
    monkeypatch.setenv("BAYES_ATTN_CACHE_DIR", str(tmp_path))
    f = disk_jit(_f)
    x = np.linspace(-1.0, 2.0, 7)
    out = f(x, 1.5)
    assert not out.committed and not jax.jit(_f)(x, 1.5).committed
    np.testing.assert_array_equal(out, jax.jit(_f)(x, 1.5))

    @jax.jit
    def consumer(v):
        return jnp.cos(v) * 2.0

    compiles.clear()
    a = consumer(np.asarray(out))  # a host array: compiled here
    b = consumer(out)  # the disk program's output: the same compiled program
    assert compiles == ["jit(consumer)"], compiles
    np.testing.assert_array_equal(a, b)
    # a committed array is another program for JAX: the counter sees that one, so it can fail
    consumer(jax.device_put(np.asarray(out), jax.devices()[0]))
    assert compiles == ["jit(consumer)"] * 2, compiles


def test_prepare_and_compile_ahead_then_the_call_compiles_nothing(monkeypatch, tmp_path, jax_events):
    """``prepare`` gives the outputs' types from the traced program (no compilation); ``compile_ahead`` compiles it for
    argument types (abstract or concrete), and a later call with arguments of those types compiles nothing more
    and gives the plain jit's numbers.  With the cache off neither can serve: the first call compiles."""
    compiles = jax_events[1]
    x = jnp.linspace(-1.0, 2.0, 7)
    expected = jax.jit(_f)(x, 1.5)
    like = jax.ShapeDtypeStruct(x.shape, x.dtype)
    monkeypatch.setenv("BAYES_ATTN_CACHE_DIR", str(tmp_path))
    f = disk_jit(_f)
    compiles.clear()
    out = f.prepare(like, 1.5)
    assert (out.shape, out.dtype) == (x.shape, x.dtype) and not compiles
    assert f.compile_ahead(like, 1.5) and compiles == ["jit(call)"]  # the disk program's compiled form
    assert np.array_equal(f(x, 1.5), expected) and compiles == ["jit(call)"]
    f(np.ones(3), 1.5)  # other types: compiled at the call, as before
    assert compiles == ["jit(call)"] * 2
    monkeypatch.setenv("BAYES_ATTN_CACHE_DIR", "off")
    g = disk_jit(_f)
    assert g.prepare(like, 1.5) is None and not g.compile_ahead(like, 1.5)
    assert np.array_equal(g(x, 1.5), expected)


def _forget_jax_deprecation_warnings() -> int:
    """Make JAX warn again about its deprecated names: each module's ``__getattr__`` warns once per process and then
    caches the name (``jax._src.deprecations``), so an earlier test's access would hide a deprecated call here."""
    import sys

    cleared = 0
    for name, module in list(sys.modules.items()):
        getter = getattr(module, "__getattr__", None) if name.split(".")[0] == "jax" else None
        if hasattr(module, "_deprecations") and hasattr(getter, "cache_clear"):
            getter.cache_clear()
            cleared += 1
    return cleared


def test_a_disk_program_uses_no_deprecated_jax_api(monkeypatch, tmp_path):
    """Calling, preparing and compiling ahead a program read from disk warns about nothing: the suite ignores
    deprecation warnings (pyproject.toml), which once let a deprecated sharding constructor print a warning in
    every command that ran a disk program (the main job's output included)."""
    import warnings

    monkeypatch.setenv("BAYES_ATTN_CACHE_DIR", str(tmp_path))
    x = jnp.linspace(-1.0, 2.0, 7)
    assert _forget_jax_deprecation_warnings() >= 1  # jax.sharding's among them
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        f = disk_jit(_f)
        f(x, 1.5)
        assert f.compile_ahead(jax.ShapeDtypeStruct((5,), x.dtype), 1.5)
        f(jnp.ones(5), 1.5)


def test_compiler_options_reach_xla_and_tracers_fall_back(monkeypatch, tmp_path):
    """``compiler_options`` are passed to XLA at top level (an unknown option is XLA's error), on and off disk,
    and a traced call (``jax.eval_shape``, where JAX refuses options on a nested jit) gets the plain jit."""
    x = jnp.linspace(-1.0, 2.0, 7)
    for cache in (str(tmp_path), "off"):
        monkeypatch.setenv("BAYES_ATTN_CACHE_DIR", cache)
        level0 = disk_jit(_f, compiler_options={"xla_backend_optimization_level": 0})
        np.testing.assert_allclose(level0(x, 1.5), jax.jit(_f)(x, 1.5), rtol=1e-14)
        assert jax.eval_shape(level0, x, 1.5).shape == (7,)
        with pytest.raises(Exception, match="no_such_xla_option"):
            disk_jit(_f, compiler_options={"no_such_xla_option": 1})(x, 1.5)
    assert _programs.options_jit(_f, None)(x, 1.5).shape == (7,)


def test_cache_off_uses_the_plain_jit(monkeypatch, tmp_path):
    monkeypatch.setenv("BAYES_ATTN_CACHE_DIR", "off")
    f = disk_jit(_f)
    assert program_dir() is None
    assert np.array_equal(f(jnp.arange(3.0), 2.0), jax.jit(_f)(jnp.arange(3.0), 2.0))


def test_the_key_follows_shapes_dtypes_tree_and_package_source(monkeypatch):
    x = jnp.ones(3)
    leaves, tree = jax.tree.flatten((x, 1.0))
    avals = tuple(jax.typeof(v) for v in leaves)
    key = _programs._key(_f, tree, avals)
    leaves32, _ = jax.tree.flatten((x.astype(jnp.float32), 1.0))
    assert _programs._key(_f, tree, tuple(jax.typeof(v) for v in leaves32)) != key  # dtype
    leaves4, _ = jax.tree.flatten((jnp.ones(4), 1.0))
    assert _programs._key(_f, tree, tuple(jax.typeof(v) for v in leaves4)) != key  # shape
    _, tree2 = jax.tree.flatten(([x], 1.0))
    assert _programs._key(_f, tree2, avals) != key  # tree structure
    monkeypatch.setattr(_programs, "package_fingerprint", lambda: "another source")
    assert _programs._key(_f, tree, avals) != key  # an edit of the package


def test_object_identities_in_the_tree_are_not_cached():
    class Opaque:  # static structure whose text shows an address
        pass

    jax.tree_util.register_pytree_node(Opaque, lambda o: ((), o), lambda aux, _: aux)
    _, tree = jax.tree.flatten((jnp.ones(2), Opaque()))
    assert _programs._key(_f, tree, (jax.typeof(jnp.ones(2)),)) is None


def test_the_theory_solver_steps_are_disk_programs():
    """The programs that dominated the start-up of ``bayes-attn theory`` (docs/design.md, "Start-up")."""
    from bayes_attn.theory import _predictor, _solver

    for fn in (_solver._newton_data, _solver._value, _solver._finish, _predictor._predict):
        assert hasattr(fn, "jitted"), fn


def test_the_key_follows_the_extra_text_and_refuses_object_identities():
    leaves, tree = jax.tree.flatten((jnp.ones(3), 1.0))
    avals = tuple(jax.typeof(v) for v in leaves)
    assert _programs._key(_f, tree, avals, "nuts|A") != _programs._key(_f, tree, avals, "nuts|B")
    assert _programs._key(_f, tree, avals, "<Model object at 0x7f00>") is None


def test_sampler_chunk_programs_are_read_from_disk_with_the_same_draws(monkeypatch, tmp_path, jax_events):
    """The runner's chunk programs (init, warm-up/draw loop, end of warm-up) of a one-device layout are disk
    programs: once a run has written them, a run in a fresh process (here: every in-memory cache dropped) traces
    none of them, and its draws are bit for bit those of the run that wrote them.  Against the plain jax.jit they
    agree to rounding: from jax 0.12.1 on, jit lowers some special functions with CPU-specific rules that an
    exported program does not use (the normal draws' inverse error function with fused multiply-adds; measured
    3e-12 relative on these draws; bit for bit with jax 0.12.0), so the comparison allows 1e-9.  NUTS: its state
    holds a dict keyed by a tuple of site names, which jax.export cannot serialise (the output tree is pickled
    beside it)."""

    from bayes_attn.inference import SamplerConfig, sample
    from bayes_attn.inference import _runner
    from conftest import random_task

    task = random_task(P=5, Q=3, S=3, n0=3, heads=(2,), seed=21)
    spec = task.spec(width=4, temperature=0.2)
    traced, compiled = jax_events

    def fresh_run(cfg):
        _runner.compiled.cache_clear()
        _runner._program.cache_clear()
        jax.clear_caches()
        traced.clear()
        return sample(task, spec, cfg)["posterior"]["f"].values

    for kind, model in (("nuts", "order_parameters"),):
        cfg = SamplerConfig(kind=kind, model=model, chains=2, warmup=6, draws=4, checkpoint_every=2, seed=5)
        monkeypatch.setenv("BAYES_ATTN_CACHE_DIR", "off")  # program_dir() None: the plain jax.jit
        plain = fresh_run(cfg)
        monkeypatch.setenv("BAYES_ATTN_CACHE_DIR", str(tmp_path / kind))
        compiled.clear()
        first = fresh_run(cfg)
        # the chunk functions were traced to be exported (``flat``: _programs._load_or_export) and written
        assert "flat" in traced and len(list(program_dir().glob("*.bin"))) >= 3  # init, loop(s), end
        # each compiled once: the chunk programs ahead of their first calls (_runner._compile_ahead), which then
        # compiled none of them again
        assert compiled.count("jit(call)") == len(list(program_dir().glob("*.bin"))), compiled
        second = fresh_run(cfg)
        assert not {"flat", "loop", "<lambda>"} & set(traced), traced  # read from disk: none traced again
        np.testing.assert_array_equal(second, first)
        np.testing.assert_allclose(first, plain, rtol=1e-9, atol=0)
        # another NumPyro or BlackJAX version: the programs traced from the old kernels are not loaded
        monkeypatch.setattr(_runner, "_kernel_libraries", lambda: "numpyro 0.0 blackjax 0.0")
        np.testing.assert_array_equal(fresh_run(cfg), first)
        assert "flat" in traced


#: the resume tests' runs (tests/test_driver.py): the session's compilation cache already holds their programs
AHEAD_CASES = [("nuts", "weights"), ("mala", "collapsed"), ("ula", "weights"), ("gibbs", "weights")]


@pytest.mark.parametrize("kind,model", AHEAD_CASES, ids=[f"{k}-{m}" for k, m in AHEAD_CASES])
def test_a_run_compiles_its_programs_ahead_and_its_calls_use_them(monkeypatch, kind, model):
    """A one-device run compiles its start, chunk and end-of-warm-up programs before the start runs
    (_runner._compile_ahead), and its calls use those: each disk program is looked up once.  A carry whose types
    differed from the start's traced outputs would look the chunk program up a second time, under other types,
    and compile it again at its first call."""
    import collections

    from bayes_attn.inference import SamplerConfig, sample
    from bayes_attn.inference import _runner
    from conftest import RESUME_RUN, driver_problem

    task, spec = driver_problem()
    spec = spec.with_(width=4)  # the resume tests' problem (tests/test_driver.py)
    cfg = SamplerConfig(kind=kind, model=model, draws=6, thinning=1, seed=7, **RESUME_RUN)
    loads, ahead = collections.Counter(), []
    load, compile_ahead = _programs._load_or_export, _programs._Caller.compile_ahead

    def counted_load(fn, treedef, leaves, path, compiler_options=None):
        loads[path.name] += 1
        return load(fn, treedef, leaves, path, compiler_options)

    def counted_ahead(self, avals):
        ahead.append(self)
        return compile_ahead(self, avals)

    monkeypatch.setattr(_programs, "_load_or_export", counted_load)
    monkeypatch.setattr(_programs._Caller, "compile_ahead", counted_ahead)
    _runner.compiled.cache_clear()  # fresh program objects: this run looks its programs up
    out = sample(task, spec, cfg)
    assert out["posterior"]["f"].sizes["draw"] == 6
    assert len(ahead) == 3 and all(c.ahead is not None for c in ahead)  # start, chunk, end of warm-up
    assert loads and max(loads.values()) == 1, loads


def test_every_model_field_is_in_its_repr():
    """The disk key of the samplers' programs holds ``repr(model)`` (inference._runner.compiled): every field that
    shapes a model's program must show there, or two models differing in it would share a program on disk."""
    import dataclasses

    from bayes_attn.inference import models

    classes = [c for c in vars(models).values() if isinstance(c, type) and dataclasses.is_dataclass(c)]
    assert {"WeightsModel", "CollapsedModel", "OrderParameterModel", "AttentionModel"} <= {c.__name__ for c in classes}
    for cls in classes:
        hidden = [f.name for f in dataclasses.fields(cls) if not f.repr]
        assert not hidden, (cls.__name__, hidden)
        for c in cls.__mro__:  # the dataclass's own repr, not one written in the package that could leave fields out
            r = vars(c).get("__repr__")
            code = getattr(r, "__code__", None)  # None: absent, or object's own (C) repr
            assert code is None or "bayes_attn" not in code.co_filename, (cls.__name__, c.__name__)


def test_nuts_step_traces_in_a_process_that_never_ran_numpyros_init():
    """A process that read NUTS's start program from disk never ran NumPyro's ``init_kernel``, whose closure holds
    settings its sample kernel reads (once a flaky AssertionError in NumPyro when a worker then traced a chunk
    program of a new length): a fresh kernel pair traces the step alone and gives the same transition."""
    from conftest import random_task

    from bayes_attn.inference import SamplerConfig, build_model
    from bayes_attn.inference.samplers import Settings
    from bayes_attn.inference.samplers import nuts

    task = random_task(P=5, Q=3, S=3, n0=3, heads=(2,), seed=4)
    spec = task.spec(width=3, temperature=0.3)
    model, args = build_model(task, spec, "collapsed")
    settings = Settings.from_config(SamplerConfig(kind="nuts", model="collapsed", warmup=10, draws=5))
    prog = nuts.program(model, settings)
    carry = jax.jit(prog.init)(jax.random.PRNGKey(0), args)
    ref, ref_stats = jax.jit(prog.step)(jax.random.PRNGKey(1), carry, args)
    nuts._kernels.cache_clear()  # a new NumPyro kernel pair whose init_kernel never runs in this process
    out, stats = jax.jit(nuts.program(model, settings).step)(jax.random.PRNGKey(1), carry, args)
    for a, b in zip(jax.tree.leaves((ref, ref_stats)), jax.tree.leaves((out, stats))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
