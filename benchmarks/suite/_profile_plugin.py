"""pytest plugin of ``benchmarks/suite/run.py``: one JSON line per test, per process, in ``$BAYES_ATTN_SUITE_PROFILE``.

A line holds the test's id, its start and end (``time.time()``), the CPU seconds of this process and of the child
processes it waited for (``resource.getrusage``), and JAX's compile events during it (the duration events of
``bayes_attn._cache.COMPILE_EVENTS``, by kind): XLA backend compilations (count and seconds, in bins of program
compile time; the programs of the last bin with JAX's name for them) and tracing + lowering seconds.  Compile
events are reported when they end, and a test that leaves a compilation running on a thread (none does) would
charge it to the next test.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest

#: upper bounds (seconds) of the bins of one backend compilation
BINS = (0.05, 0.2, 1.0, float("inf"))


class _Counts:
    """Compile events so far, by kind: ``names`` is ``bayes_attn._cache.COMPILE_EVENTS`` (XLA's event last, tracing
    and lowering before it)."""

    def __init__(self, names):
        self.trace, self.backend = tuple(names[:-1]), names[-1]
        self.backend_s = [0.0] * len(BINS)
        self.backend_n = [0] * len(BINS)
        self.trace_s = 0.0
        self.large = []

    def listen(self, name, duration, **kwargs):
        d = float(duration)
        if name == self.backend:
            i = next(i for i, b in enumerate(BINS) if d < b)
            self.backend_s[i] += d
            self.backend_n[i] += 1
            if i == len(BINS) - 1:
                self.large.append([str(kwargs.get("fun_name", "?")), d])
        elif name in self.trace:
            self.trace_s += d

    def snapshot(self):
        return list(self.backend_s), list(self.backend_n), self.trace_s, len(self.large)


_COUNTS = None
_OUT = None


def _out():
    global _COUNTS, _OUT
    if _OUT is None:  # at the first test: the test session's conftest has set up JAX by then
        import jax.monitoring

        from bayes_attn._cache import COMPILE_EVENTS

        _COUNTS = _Counts(COMPILE_EVENTS)
        jax.monitoring.register_event_duration_secs_listener(_COUNTS.listen)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _OUT = open(Path(os.environ["BAYES_ATTN_SUITE_PROFILE"]) / f"{worker}.jsonl", "a")
    return _OUT


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    out = _out()
    t0, c0, k0, (s0, n0, tr0, l0) = time.time(), time.process_time(), _children_cpu(), _COUNTS.snapshot()
    yield
    s1, n1, tr1, l1 = _COUNTS.snapshot()
    row = {
        "id": item.nodeid,
        "start": t0,
        "end": time.time(),
        "cpu_s": time.process_time() - c0,
        "children_cpu_s": _children_cpu() - k0,
        "backend_s": [b - a for a, b in zip(s0, s1)],
        "backend_n": [b - a for a, b in zip(n0, n1)],
        "trace_lower_s": tr1 - tr0,
        "large": _COUNTS.large[l0:l1],
    }
    out.write(json.dumps(row) + "\n")
    out.flush()
