"""Claiming cores (bayes_attn._cpus): two processes started together take different cores, the least busy
core first, a lock goes with its process, and ``--cpus`` is validated at the command line."""

import json
import os
import subprocess
import sys
import time

import pytest

from bayes_attn import _cpus
from bayes_attn.cli._main import cpus_wanted

needs_two = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or (os.cpu_count() or 1) < 2, reason="needs CPU affinity and 2 cores"
)

# A process that starts on every core (the test worker is pinned to one), claims ``n`` cores, reports them,
# and holds them until the file ``release`` appears.
CLAIM = r"""
import json, os, sys, time
from pathlib import Path
try:
    os.sched_setaffinity(0, range(os.cpu_count()))
except OSError:
    pass
from bayes_attn._cpus import claim_cpus
n, release = int(sys.argv[1]), Path(sys.argv[2])
cpus = claim_cpus(n)
print(json.dumps({"cpus": cpus, "affinity": sorted(os.sched_getaffinity(0)),
                  "threads": os.environ.get("OPENBLAS_NUM_THREADS")}), flush=True)
while not release.exists():
    time.sleep(0.02)
"""


def _start(n, release, lock_dir):
    env = {**os.environ, _cpus.LOCK_ENV: str(lock_dir)}
    return subprocess.Popen(
        [sys.executable, "-c", CLAIM, str(n), str(release)], env=env, stdout=subprocess.PIPE, text=True
    )


def _report(proc):
    return json.loads(proc.stdout.readline())


@needs_two
def test_two_processes_started_together_claim_different_cores(tmp_path):
    release = tmp_path / "release"
    procs = [_start(1, release, tmp_path / "locks") for _ in range(2)]
    try:
        reports = [_report(p) for p in procs]
    finally:
        release.touch()
        for p in procs:
            p.wait(timeout=60)
    cores = [r["cpus"] for r in reports]
    assert all(c is not None and len(c) == 1 for c in cores), cores
    assert cores[0] != cores[1], cores
    for r in reports:
        assert r["affinity"] == list(r["cpus"]) and r["threads"] == "1", r


@needs_two
def test_a_third_process_shares_and_a_lock_goes_with_its_process(tmp_path):
    """With both cores claimed a third process still runs (on one core, shared); once a holder exits, its core
    is free again for the next process."""
    release1, release2 = tmp_path / "r1", tmp_path / "r2"
    locks = tmp_path / "locks"
    first = [_start(1, release1, locks) for _ in range(2)]
    try:
        held = sorted(_report(p)["cpus"][0] for p in first)
        third = _start(1, release2, locks)
        shared = _report(third)["cpus"]
        release2.touch()
        third.wait(timeout=60)
        assert len(shared) == 1 and shared[0] in held
    finally:
        release1.touch()
        for p in first:
            p.wait(timeout=60)
    release3 = tmp_path / "r3"
    again = [_start(1, release3, locks) for _ in range(2)]
    try:
        got = sorted(_report(p)["cpus"][0] for p in again)
    finally:
        release3.touch()
        for p in again:
            p.wait(timeout=60)
    assert len(set(got)) == 2, got


def test_the_least_busy_free_core_is_chosen(tmp_path, monkeypatch):
    monkeypatch.setattr(_cpus, "allowed_cpus", lambda: [0, 1, 2, 3])
    _cpus.release_cpus()
    try:
        got = _cpus.choose_cpus(2, busy={0: 0.9, 1: 0.2, 2: 0.0, 3: 0.5}, folder=tmp_path)
        assert got == (1, 2)
        # this process holds 1 and 2 now; asking again returns the cores it holds
        assert _cpus.choose_cpus(2, busy={0: 0.0, 1: 0.9, 2: 0.9, 3: 0.0}, folder=tmp_path) == (1, 2)
    finally:
        _cpus.release_cpus()


def test_a_core_locked_by_another_holder_is_skipped(tmp_path, monkeypatch):
    import fcntl

    monkeypatch.setattr(_cpus, "allowed_cpus", lambda: [0, 1])
    _cpus.release_cpus()
    fd = os.open(tmp_path / "cpu0.lock", os.O_RDWR | os.O_CREAT)  # another open file description: its own lock
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        assert _cpus.choose_cpus(1, busy={0: 0.0, 1: 0.5}, folder=tmp_path) == (1,)
        _cpus.release_cpus()
        fcntl.flock(fd, fcntl.LOCK_UN)
        assert _cpus.choose_cpus(1, busy={0: 0.0, 1: 0.5}, folder=tmp_path) == (0,)
    finally:
        _cpus.release_cpus()
        os.close(fd)


def test_busy_fraction_sees_a_spinning_core():
    if not _cpus._cpu_times():
        pytest.skip("no /proc/stat")
    me = sorted(os.sched_getaffinity(0))[0]
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import os, time\nos.sched_setaffinity(0, {{{me}}})\nt = time.time()\nwhile time.time() - t < 3: pass",
        ]
    )
    try:
        time.sleep(0.5)
        busy = _cpus.cpu_busy([me], interval=0.5)
    finally:
        child.kill()
        child.wait()
    assert busy[me] > 0.5, busy


def test_all_cores_wanted_claims_nothing():
    assert _cpus.claim_cpus(len(_cpus.allowed_cpus())) is None


@pytest.mark.parametrize("value", ["0", "-1", "3", "two", "1.5"])
def test_cpus_option_is_validated(value):
    from bayes_attn import InputError

    with pytest.raises(InputError, match="--cpus"):
        cpus_wanted(value, 1, usable=2)


def test_cpus_option_sources(monkeypatch):
    monkeypatch.delenv("BAYES_ATTN_CPUS", raising=False)
    assert cpus_wanted(None, 1, usable=2) == 1
    assert cpus_wanted(None, "all", usable=2) == 2
    assert cpus_wanted("ALL", 1, usable=2) == 2
    monkeypatch.setenv("BAYES_ATTN_CPUS", "2")
    assert cpus_wanted(None, 1, usable=2) == 2
    assert cpus_wanted("1", "all", usable=2) == 1  # the option beats the variable
    monkeypatch.setenv("BAYES_ATTN_CPUS", "9")
    from bayes_attn import InputError

    with pytest.raises(InputError, match="BAYES_ATTN_CPUS"):
        cpus_wanted(None, 1, usable=2)


def test_cli_bad_cpus_is_one_line_and_exit_2(tmp_path):
    out = tmp_path / "t.nc"
    res = subprocess.run(
        [sys.executable, "-m", "bayes_attn.cli", "theory", "missing.toml", "--out", str(out), "--cpus", "0"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2
    assert res.stderr.strip().startswith("error: --cpus:") and len(res.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_main_called_from_python_leaves_the_affinity_alone(tmp_path, capsys):
    """``main([...])`` (a notebook, a test) validates ``--cpus`` but claims nothing: only the console script
    pins its process."""
    from bayes_attn.cli import main

    before = _cpus.allowed_cpus()
    assert main(["theory", str(tmp_path / "missing.toml"), "--out", str(tmp_path / "t.nc"), "--cpus", "1"]) == 2
    assert "missing.toml" in capsys.readouterr().err
    assert _cpus.allowed_cpus() == before and not _cpus._HELD


# A process that starts on every core, claims one, primes XLA's compiler, and borrows a second core: it reports its
# affinity inside and after the borrow, and whether another process could lock the borrowed core meanwhile.
BORROW = r"""
import json, os, subprocess, sys
try:
    os.sched_setaffinity(0, range(os.cpu_count()))
except OSError:
    pass
from bayes_attn import _cpus
cpus = _cpus.claim_cpus(1)
primed = _cpus.prime_compiler()
after_prime = sorted(os.sched_getaffinity(0))
probe = "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)"
with _cpus.borrowed_cpu(max_busy=1.01) as cpu:
    inside = sorted(os.sched_getaffinity(0))
    lock = str(_cpus.lock_dir() / f"cpu{cpu}.lock")
    locked = subprocess.run([sys.executable, "-c", probe, lock]).returncode != 0
print(json.dumps({"cpus": cpus, "primed": primed, "after_prime": after_prime, "cpu": cpu, "inside": inside,
                  "after": sorted(os.sched_getaffinity(0)), "locked_inside": locked,
                  "locked_after": subprocess.run([sys.executable, "-c", probe, lock]).returncode != 0}))
"""


@needs_two
def test_a_claimed_process_borrows_an_idle_core_for_a_while(tmp_path):
    """After the claim and the compiler's priming the process is pinned to its core; inside ``borrowed_cpu`` it
    may also run on a second core, whose lock it holds (another process cannot claim it), and afterwards it is
    pinned back and the lock is free."""
    env = {**os.environ, _cpus.LOCK_ENV: str(tmp_path / "locks")}
    res = subprocess.run([sys.executable, "-c", BORROW], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    r = json.loads(res.stdout.strip().splitlines()[-1])
    (own,) = r["cpus"]
    assert r["primed"] and r["after_prime"] == [own]
    assert r["cpu"] is not None and r["cpu"] != own
    assert r["inside"] == sorted([own, r["cpu"]]) and r["locked_inside"]
    assert r["after"] == [own] and not r["locked_after"]


def test_nothing_is_borrowed_without_a_claim_and_a_primed_compiler(monkeypatch):
    """A process that did not claim (the Python API, a test worker) keeps its affinity; so does one whose compiler
    was not primed (its compilations could not use a second core)."""
    before = _cpus.allowed_cpus()
    with _cpus.borrowed_cpu(max_busy=1.01) as cpu:
        assert cpu is None and _cpus.allowed_cpus() == before
    assert not _cpus.prime_compiler()  # nothing claimed: nothing to prime
    monkeypatch.setitem(_cpus._CLAIM, "cpus", (before[0],))
    monkeypatch.setitem(_cpus._CLAIM, "before", (before[0], before[0] + 1))
    monkeypatch.setattr(_cpus, "_PRIMED", [])
    with _cpus.borrowed_cpu(max_busy=1.01) as cpu:
        assert cpu is None and _cpus.allowed_cpus() == before


def test_a_claim_waits_for_a_borrowed_core_rather_than_share(tmp_path, monkeypatch):
    """Both cores locked, one of them only borrowed: the claim waits until the borrow ends and takes that core;
    with both claimed for good it shares one at once (the wait is for borrowed cores only)."""
    import fcntl
    import threading

    monkeypatch.setattr(_cpus, "allowed_cpus", lambda: [0, 1])
    monkeypatch.setattr(_cpus, "BORROW_WAIT_S", 20.0)
    _cpus.release_cpus()

    def hold(name):
        fd = os.open(tmp_path / name, os.O_RDWR | os.O_CREAT)  # another open file description: its own lock
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd

    claimed, borrowed, marker = hold("cpu0.lock"), hold("cpu1.lock"), hold("cpu1.borrowed")

    def end_borrow():
        os.close(borrowed)
        os.close(marker)

    timer = threading.Timer(0.5, end_borrow)
    try:
        t = time.monotonic()
        timer.start()
        assert _cpus.choose_cpus(1, busy={0: 0.0, 1: 0.0}, folder=tmp_path) == (1,)
        assert time.monotonic() - t >= 0.4  # it waited for the borrow to end
        _cpus.release_cpus()
        held = hold("cpu1.lock")
        t = time.monotonic()
        assert _cpus.choose_cpus(1, busy={0: 0.0, 1: 0.5}, folder=tmp_path) == (0,)  # shared, not waited for
        assert time.monotonic() - t < 5
        os.close(held)
    finally:
        timer.cancel()
        _cpus.release_cpus()
        os.close(claimed)
