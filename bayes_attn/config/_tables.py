"""The ``[data]`` and ``[network]`` tables of a run config as typed, validated records.

Their keys are derived, not listed by hand: ``[data]`` of a generated task takes exactly the keyword
arguments of :func:`bayes_attn.tasks.markov_task`, ``[network]`` the fields of :class:`NetworkTable` (with
``width`` and ``temperature`` as the TOML spellings of :attr:`NetworkTable.widths` and
:attr:`NetworkTable.temperatures`, each a value or a list for theory scans).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import InputError, require
from ..tasks import Task, load_bundle, markov_task

#: the generated tasks of ``[data] task = ...`` and the functions that make them (their keyword arguments are the
#: table's keys)
TASKS = {"markov": markov_task}


def unknown_keys(table: dict, allowed, name: str) -> None:
    """An :class:`~bayes_attn.InputError` naming the first key of ``table`` not in ``allowed``."""
    extra = sorted(set(table) - set(allowed))
    if extra:
        raise InputError(f"{name}.{extra[0]}: unknown key (allowed: {', '.join(sorted(allowed))})")


def _listify(v) -> tuple:
    return tuple(v) if isinstance(v, list) else (v,)


@dataclass(frozen=True)
class DataTable:
    """The ``[data]`` table: an ``.npz`` bundle (``file``, relative to the config's folder) or a generated task
    (``task``, e.g. ``"markov"``, with ``options``: the keyword arguments of its function in :data:`TASKS`)."""

    file: str | None = None
    task: str | None = None
    options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def from_table(cls, table: dict) -> "DataTable":
        """Validate a ``[data]`` table (one line naming the key on bad input)."""
        d = dict(table)
        if "file" in d:
            unknown_keys(d, {"file"}, "data")
            require(isinstance(d["file"], str), "data.file", "must be a path string")
            return cls(file=d["file"])
        if "task" in d:
            task = d.pop("task")
            require(task in TASKS, "data.task", f"unknown value {task!r}; expected {' or '.join(map(repr, TASKS))}")
            unknown_keys(d, set(inspect.signature(TASKS[task]).parameters) | {"task"}, "data")
            return cls(task=task, options=tuple(sorted(d.items())))
        raise InputError("data: needs 'file' (an .npz bundle) or 'task' (e.g. 'markov')")

    def load(self, base_dir=Path(".")) -> Task:
        """The :class:`~bayes_attn.tasks.Task`: the bundle read, or the task generated."""
        if self.file is not None:
            return load_bundle(Path(base_dir) / self.file)
        kw = dict(self.options)
        if "head_seeds" in kw:
            kw["head_seeds"] = tuple(kw["head_seeds"])
        return TASKS[self.task](**kw)


@dataclass(frozen=True)
class NetworkTable:
    """The ``[network]`` table.

    Attributes
    ----------
    widths : tuple
        The networks' widths (TOML ``width``: a width or a list of them for theory scans; or ``widths = [N_1, ...,
        N_L, N_a]``, one network with a width per layer).
    temperatures : tuple of float
        TOML ``temperature``: one value or a list (theory scans).
    readout : str
        ``"last"``, ``"first"`` or ``"mean"``.
    variances : float or list of float
        Prior variances: input, layers 1..L, readout.
    """

    widths: tuple
    temperatures: tuple
    readout: str = "last"
    variances: Any = 1.0

    @classmethod
    def from_table(cls, table: dict) -> "NetworkTable":
        """Validate a ``[network]`` table's keys and shape (values: :class:`~bayes_attn.network.NetworkSpec`)."""
        net = dict(table)
        unknown_keys(net, {"width", "widths", "temperature", "readout", "variances"}, "network")
        require("width" in net or "widths" in net, "network.width", "missing")
        require("temperature" in net, "network.temperature", "missing")
        for key in ("width", "temperature"):
            if key in net and isinstance(net[key], list):
                require(len(net[key]) >= 1, f"network.{key}", "is an empty list")
        widths = (net["widths"],) if "widths" in net else _listify(net["width"])
        return cls(widths, _listify(net["temperature"]), net.get("readout", "last"), net.get("variances", 1.0))


__all__ = ["DataTable", "NetworkTable", "TASKS", "unknown_keys"]
