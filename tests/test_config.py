"""bayes_attn.config: every SamplerConfig field classified (hashed or a run option), one hash for the checkpoint
fingerprint and the sweep cell, every diagnostic gate settable from TOML, the one TOML reader."""

import dataclasses
import warnings

import numpy as np
import pytest

from bayes_attn import InputError
from bayes_attn._io import read_toml
from bayes_attn.config import (
    ATTENTION_OPTIONS,
    FIELD_ROLES,
    RUN_OPTIONS,
    SamplerConfig,
    Thresholds,
    parse_config,
    sampler_config,
    settings_hash,
)
from bayes_attn.inference import fingerprint
from bayes_attn.sweep import cell_hash

#: per field: (base settings, a change of that field); a new field needs an entry (the test below says so)
CHANGES = {
    "kind": ({"model": "collapsed"}, {"kind": "mala"}),
    "model": ({}, {"model": "collapsed"}),
    "collapsed": ({}, {"collapsed": True}),
    "chains": ({}, {"chains": 2}),
    "warmup": ({}, {"warmup": 10}),
    "draws": ({}, {"draws": 20}),
    "thinning": ({}, {"thinning": 2}),
    "seed": ({}, {"seed": 1}),
    "store_weights": ({}, {"store_weights": True}),
    "progress_bar": ({}, {"progress_bar": False}),
    "target_accept": ({}, {"target_accept": 0.9}),
    "max_tree_depth": ({}, {"max_tree_depth": 5}),
    "dense_mass": ({}, {"dense_mass": True}),
    "step_size": ({"kind": "mala"}, {"step_size": 0.1}),
    "ula_step_factor": ({"kind": "ula"}, {"ula_step_factor": 0.2}),
    "checkpoint_every": ({}, {"checkpoint_every": 7}),
    "chain_method": ({}, {"chain_method": "sequential"}),
    "init": ({"model": "order_parameters"}, {"init": "theory"}),
    "devices": ({}, {"devices": 2}),
    "path_space": ({}, {"path_space": "dense"}),
    "precision": ({}, {"precision": "float32"}),
    "save_warmup": ({}, {"save_warmup": True}),
    "rank": ({"model": "attention", "rank": 1}, {"rank": 2}),
    "basis": ({"model": "attention", "rank": 1}, {"basis": "basis.npy"}),
    "attention_scale": ({"model": "attention", "rank": 1}, {"attention_scale": 0.5}),
    "limit": ({"model": "attention", "rank": 1}, {"limit": "gp"}),
    "replicas": ({"kind": "tempering", "model": "order_parameters"}, {"replicas": 4}),
    "beta_min": ({"kind": "tempering", "model": "order_parameters"}, {"beta_min": 0.1}),
}
FIELDS = [f.name for f in dataclasses.fields(SamplerConfig)]
DATA = {"task": "markov", "P": 10, "n_test": 6}
NETWORK = {"width": 3, "temperature": 0.1}


def _raw(settings: dict) -> dict:
    """A run config's tables for ``settings`` (``model`` goes to ``[model] kind``, the attention options to
    ``[model]``)."""
    s = dict(settings)
    raw = {"data": dict(DATA), "network": dict(NETWORK), "sampler": s}
    if "model" in s:
        raw["model"] = {"kind": s.pop("model")}
    for k in (*ATTENTION_OPTIONS, "path_space"):
        if k in s:
            raw.setdefault("model", {})[k] = s.pop(k)
    return raw


def test_every_field_is_classified():
    assert set(FIELD_ROLES) == set(FIELDS), "classify every SamplerConfig field in config._sampler.FIELD_ROLES"
    assert set(FIELD_ROLES.values()) == {"draws", "run"}
    assert set(RUN_OPTIONS) == {"progress_bar", "checkpoint_every", "chain_method", "devices", "path_space"}


@pytest.mark.parametrize("name", FIELDS)
def test_a_field_changes_the_hashes_as_classified(name, tmp_path):
    """A hashed field changes the settings hash, the checkpoint fingerprint and the sweep cell hash; a run option
    changes none of them (the same function makes all three)."""
    assert name in CHANGES, f"give tests/test_config.py a change of the new field {name!r}"
    base, change = CHANGES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "collapsed" is a deprecated alias
        a, b = SamplerConfig(**base), SamplerConfig(**{**base, **change})
        ra, rb = _raw(base), _raw({**base, **change})
        ca, cb = cell_hash(ra, tmp_path), cell_hash(rb, tmp_path)
    assert getattr(a, name) != getattr(b, name)
    run_option = FIELD_ROLES[name] == "run"
    x = np.arange(6.0).reshape(2, 3)
    assert (settings_hash(a) == settings_hash(b)) == run_option
    assert (fingerprint(a, "spec", "model", (x,)) == fingerprint(b, "spec", "model", (x,))) == run_option
    assert (ca == cb) == run_option


def test_fingerprint_and_cell_hash_are_the_settings_hash(tmp_path):
    cfg = SamplerConfig(kind="mala", model="collapsed", seed=3)
    x = np.arange(4.0)
    assert fingerprint(cfg, "spec", "model", (x, None)) == settings_hash(cfg, repr("spec"), repr("model"), x)
    raw = _raw({"kind": "mala", "model": "collapsed", "seed": 3})
    raw["diagnostics"] = {"rhat_max": 1.05}
    tables = {"data": raw["data"], "diagnostics": raw["diagnostics"], "network": raw["network"]}
    assert cell_hash(raw, tmp_path) == settings_hash(cfg, tables, "")[:16]
    # what else enters: the other tables, the data arrays, their shape
    assert cell_hash({**raw, "network": {"width": 4, "temperature": 0.1}}, tmp_path) != cell_hash(raw, tmp_path)
    assert settings_hash(cfg, x) != settings_hash(cfg, x + 1) != settings_hash(cfg, x.reshape(2, 2))


def test_a_samplers_own_new_options_leave_other_samplers_hashes_alone(tmp_path):
    """replicas and beta_min (SAMPLER_ONLY_FIELDS) enter the hash of a tempering run only: a NUTS run hashes as it
    did before the tempering sampler existed, whatever they are set to."""
    from bayes_attn.config import SAMPLER_ONLY_FIELDS, hashed_settings

    nuts = SamplerConfig(model="order_parameters")
    assert not set(SAMPLER_ONLY_FIELDS) & set(hashed_settings(nuts))
    assert settings_hash(nuts) == settings_hash(SamplerConfig(model="order_parameters", replicas=3, beta_min=0.2))
    t = SamplerConfig(kind="tempering", model="order_parameters")
    assert set(SAMPLER_ONLY_FIELDS) <= set(hashed_settings(t))


def test_aliases_hash_as_their_canonical_spelling(tmp_path):
    with pytest.warns(FutureWarning, match="deprecated"):
        old = cell_hash({**_raw({}), "sampler": {"kind": "wishart"}}, tmp_path)
    assert old == cell_hash(_raw({"kind": "nuts", "model": "order_parameters"}), tmp_path)
    with pytest.warns(FutureWarning, match="deprecated"):
        cfg = sampler_config({"sampler": {"collapsed": True}})
    assert cfg == sampler_config({"model": {"kind": "collapsed"}})


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(Thresholds)])
def test_every_gate_is_a_toml_key(name):
    value = {"max_divergences": 3}.get(name, 0.25)
    cfg = parse_config({**_raw({}), "diagnostics": {name: value}})
    assert isinstance(cfg.diagnostics, Thresholds) and getattr(cfg.diagnostics, name) == value
    assert cfg.diagnostics == Thresholds(**{name: value})


@pytest.mark.parametrize(
    "table,field",
    [
        ({"rhat": 1.1}, "diagnostics.rhat"),
        ({"max_divergences": -1}, "diagnostics.max_divergences"),
        ({"max_divergences": 0.5}, "diagnostics.max_divergences"),
        ({"bfmi_min": -0.1}, "diagnostics.bfmi_min"),
        ({"bfmi_min": "low"}, "diagnostics.bfmi_min"),
        ({"ess_bulk_min": 0}, "diagnostics.ess_bulk_min"),
    ],
)
def test_bad_gates_name_their_key(table, field):
    with pytest.raises(InputError, match=f"^{field}"):
        parse_config({**_raw({}), "diagnostics": table})


def test_the_toml_reader(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text("[sampler]\nseed = 2\n")
    raw, text = read_toml(p)
    assert raw == {"sampler": {"seed": 2}} and text == p.read_text()
    p.write_text("[[[broken")
    with pytest.raises(InputError, match=r"^potts: .* is not valid TOML"):
        read_toml(p, field="potts")
    with pytest.raises(InputError, match=r"^config: cannot read .* \(no such file\)"):
        read_toml(tmp_path / "missing.toml")
    p.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match=r"^config: cannot read"):
        read_toml(p)


def test_kernel_options_come_from_the_registry():
    """Each sampler's record names the kernel options its program reads; they are hashed fields."""
    from bayes_attn.config import REGISTRY

    assert REGISTRY["nuts"].options == ("target_accept", "max_tree_depth", "dense_mass")
    assert REGISTRY["gibbs"].options == ()
    for s in REGISTRY.values():
        assert all(FIELD_ROLES[o] == "draws" for o in s.options), s.name


@pytest.mark.parametrize(
    "kind,key,value,warns",
    [
        ("mala", "max_tree_depth", 6, True),
        ("gibbs", "target_accept", 0.9, True),
        ("nuts", "step_size", 0.1, True),
        ("nuts", "max_tree_depth", 6, False),
        ("ula", "ula_step_factor", 0.2, False),
    ],
)
def test_another_samplers_option_warns(kind, key, value, warns):
    from bayes_attn import ConfigWarning

    raw = {"model": {"kind": "collapsed"}, "sampler": {"kind": kind, key: value}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = sampler_config(raw)
    msgs = [str(w.message) for w in caught if issubclass(w.category, ConfigWarning)]
    assert getattr(cfg, key) == value
    if warns:
        assert len(msgs) == 1 and msgs[0].startswith(f"sampler.{key}: not an option of the {kind} sampler"), msgs
    else:
        assert msgs == []


def test_data_and_network_tables_are_typed_records():
    """[data] keys are markov_task's keyword arguments (nothing to drift); [network] becomes a NetworkTable."""
    import inspect

    from bayes_attn.config import DataTable, NetworkTable
    from bayes_attn.tasks import markov_task

    every = {k: p.default for k, p in inspect.signature(markov_task).parameters.items() if p.default is not None}
    d = DataTable.from_table({"task": "markov", **every})
    assert d.task == "markov" and dict(d.options) == every and d.file is None
    with pytest.raises(InputError, match=r"^data\.seed: unknown key \(allowed: P, beta_att,"):
        DataTable.from_table({"task": "markov", "seed": 1})
    cfg = parse_config({"data": {"file": "b.npz"}, "network": {"width": [3, 5], "temperature": 0.1, "readout": "mean"}})
    assert cfg.data == DataTable(file="b.npz")
    assert cfg.network == NetworkTable(widths=(3, 5), temperatures=(0.1,), readout="mean")
    assert cfg.widths == [3, 5] and cfg.temperatures == [0.1]
    assert NetworkTable.from_table({"widths": [3, 4, 2], "temperature": [0.1, 1.0]}).widths == ([3, 4, 2],)
