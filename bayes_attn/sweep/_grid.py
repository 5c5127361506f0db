"""A sweep: an ordinary run config plus a ``[sweep]`` table whose keys are dotted config keys and whose
values are lists; the grid of cells is their product.

```toml
[sweep]
"network.width" = [10, 30, 100, 1000]
"network.temperature" = [0.01, 0.1]
"sampler.seed" = [0, 1, 2]
"data.P" = [100, 200]          # any scalar key of [data] / [network] / [model] / [sampler]
```

A **paired axis** is a table under ``[sweep]``: its keys are dotted config keys whose lists have one length, and
the i-th entries go together (one axis of that length, named by the table, with labels such as ``P100_width200``).
It is what a grid at a fixed ratio needs, e.g. a fixed load ``alpha = P / N`` while both grow, or a data seed with
its own sampler seed:

```toml
[sweep.size]
"data.P" = [100, 1000, 10000, 100, 1000, 10000]
"network.width" = [200, 2000, 20000, 25, 250, 2500]
[sweep.seed]
"data.seed_train" = [27, 28, 29]
"sampler.seed" = [0, 1, 2]
```

Every cell is validated before anything runs (bad input: one line naming the key or value).  A
cell's **hash** covers its whole resolved config but the run options (and the content of a ``[data]
file``), so a cell file made from the same config is recognised and reused.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import require
from ..config import sampler_config, settings_hash

#: tables whose scalar keys a sweep may vary
SWEEPABLE = ("data", "network", "model", "sampler")


@dataclass(frozen=True)
class Cell:
    """One grid point: its index along every axis, its values, readable name, config and hash."""

    index: tuple[int, ...]
    values: tuple
    name: str
    raw: dict = field(repr=False)
    hash: str


@dataclass(frozen=True)
class Sweep:
    """The axes (dotted key, short name, values) and the cells of a sweep config."""

    keys: tuple[str, ...]
    names: tuple[str, ...]
    values: tuple[tuple, ...]
    cells: tuple[Cell, ...]
    base_dir: Path
    text: str
    #: per axis, the dotted keys it sets and, per entry, their values (one key for an ordinary axis, several for a
    #: paired one, whose ``keys`` entry joins them with ``+`` and whose ``values`` are the entries' labels)
    settings: tuple[tuple[tuple[str, ...], tuple[tuple, ...]], ...] = ()
    #: per axis, whether it is a paired axis (a table under ``[sweep]``)
    paired: tuple[bool, ...] = ()

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(v) for v in self.values)


def axis_names(keys) -> tuple[str, ...]:
    """The last part of each key (``network.width`` -> ``width``), the full key with ``_`` on a clash."""
    last = [k.split(".")[-1] for k in keys]
    return tuple(n if last.count(n) == 1 else k.replace(".", "_") for n, k in zip(last, keys))


def _format(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _digest_files(raw: dict, base_dir: Path) -> str:
    """Digest of the content of the files a cell reads: ``[data] file`` and ``[model] basis``."""
    out = ""
    for table, key in (("data", "file"), ("model", "basis")):
        name = raw.get(table, {}).get(key)
        if isinstance(name, str):
            p = base_dir / name
            out += hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
    return out


def cell_hash(raw: dict, base_dir: Path, sampler=None) -> str:
    """Hash of a cell: :func:`bayes_attn.config.settings_hash` (the function that makes a checkpoint's
    fingerprint) of its resolved sampler settings (``sampler``, or read from ``raw``: defaults filled in,
    aliases resolved, run options left out, the package version in), its other tables and its data file's
    content.  A changed default is a changed cell; a changed progress bar, checkpoint interval or chain
    layout is not."""
    if sampler is None:
        sampler = sampler_config(raw)
    tables = {k: raw[k] for k in sorted(raw) if k not in ("sweep", "sampler", "model")}
    return settings_hash(sampler, tables, _digest_files(raw, base_dir))[:16]


def _set(raw: dict, key: str, value) -> None:
    table, name = key.split(".", 1)
    raw.setdefault(table, {})[name] = value


def _check_key(key: str, where: str) -> None:
    parts = key.split(".")
    require(
        len(parts) == 2 and parts[0] in SWEEPABLE,
        where,
        f'must be a dotted key of [{"] / [".join(SWEEPABLE)}], e.g. "network.width"',
    )


def _check_values(vals, where: str) -> None:
    require(isinstance(vals, list), where, f"must be a list of values, got {vals!r}")
    require(len(vals) >= 1, where, "is an empty list")
    for v in vals:
        require(
            isinstance(v, (int, float, str, bool)), where, f"takes scalar values only (one value per cell), got {v!r}"
        )


def _paired_axis(name: str, table: dict):
    """``(keys, entries, labels)`` of the paired axis ``[sweep.<name>]`` (module docstring)."""
    require(name.isidentifier(), f"sweep.{name}", "a paired axis is named by a plain word (e.g. [sweep.size])")
    require(len(table) >= 1, f"sweep.{name}", "is an empty table")
    for key, vals in table.items():
        _check_key(key, f"sweep.{name}.{key}")
        _check_values(vals, f"sweep.{name}.{key}")
    keys = tuple(table)
    n = len(table[keys[0]])
    for key in keys:
        require(len(table[key]) == n, f"sweep.{name}.{key}", f"has {len(table[key])} values, {keys[0]!r} has {n}")
    entries = tuple(zip(*(table[k] for k in keys)))
    require(len(set(map(repr, entries))) == n, f"sweep.{name}", "has repeated entries")
    short = axis_names(keys)
    labels = tuple("_".join(f"{s}{_format(v)}" for s, v in zip(short, e)) for e in entries)
    return keys, entries, labels


def build_sweep(raw: dict, base_dir=Path("."), text: str = "", validate=None) -> Sweep:
    """The :class:`Sweep` of a parsed TOML dict; ``validate(cell_raw, label)`` checks each cell's config and
    returns its :class:`~bayes_attn.config.SamplerConfig` (hashed by :func:`cell_hash`)."""
    require(
        "sweep" in raw and isinstance(raw["sweep"], dict) and raw["sweep"],
        "sweep",
        "missing or empty table [sweep] (dotted config keys -> lists of values)",
    )
    keys, names, values, settings = [], [], [], []
    for key, vals in raw["sweep"].items():
        if isinstance(vals, dict):
            axis_keys, entries, labels = _paired_axis(key, vals)
        else:
            _check_key(key, f"sweep.{key}")
            _check_values(vals, f"sweep.{key}")
            require(len(set(map(repr, vals))) == len(vals), f"sweep.{key}", f"has repeated values {vals!r}")
            axis_keys, entries, labels = (key,), tuple((v,) for v in vals), tuple(vals)
        keys.append("+".join(axis_keys))
        names.append(key if isinstance(vals, dict) else None)
        values.append(labels)
        settings.append((axis_keys, entries))
    is_paired = [n is not None for n in names]
    auto = iter(axis_names([k for k, n in zip(keys, names) if n is None]))
    names = tuple(n if n is not None else next(auto) for n in names)
    require(len(set(names)) == len(names), "sweep", f"two axes share a name: {', '.join(names)}")
    base = {k: v for k, v in raw.items() if k != "sweep"}
    cells = []
    for index in itertools.product(*(range(len(v)) for v in values)):
        cell_raw = copy.deepcopy(base)
        vals = tuple(values[a][i] for a, i in enumerate(index))
        pairs = [(k, v) for a, i in enumerate(index) for k, v in zip(settings[a][0], settings[a][1][i])]
        for k, v in pairs:
            _set(cell_raw, k, v)
        label = ", ".join(f"{k} = {v!r}" for k, v in pairs)
        resolved = validate(cell_raw, label) if validate is not None else None
        name = "_".join(str(v) if paired else f"{n}{_format(v)}" for n, v, paired in zip(names, vals, is_paired))
        cells.append(Cell(index, vals, name, cell_raw, cell_hash(cell_raw, Path(base_dir), resolved)))
    return Sweep(
        tuple(keys), names, tuple(values), tuple(cells), Path(base_dir), text, tuple(settings), tuple(is_paired)
    )


__all__ = ["Cell", "Sweep", "build_sweep", "cell_hash", "axis_names", "SWEEPABLE"]
