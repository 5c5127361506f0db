"""Sharing the machine: a process claims the least-loaded free CPUs and pins itself to them.

Several JAX processes on few cores fight: unpinned, the runtime's worker threads of each process move over
every core and spin while they wait for each other, and two processes on the 2-core machine each ran many
times slower than one alone, whatever ``XLA_FLAGS`` said; pinned one per core, each ran as fast as one alone
(docs/design.md, "Several JAX processes on few cores").  Pinning alone is not enough when two processes start
together: both would see the same idle core.  So a process *claims* its cores:

1. it reads how busy each CPU it may use is (:func:`cpu_busy`, two samples of ``/proc/stat``), so that a core
   loaded by any other program is avoided;
2. it takes, least busy first, an exclusive non-blocking ``flock`` on one lock file per core in
   :func:`lock_dir` (the kernel decides atomically which of two simultaneous processes gets a core, and frees
   the lock when the process ends, however it ends);
3. where fewer cores are free than asked for, it shares the least busy of the claimed ones (nothing blocks);
4. it pins every thread to the claimed cores (:func:`pin_to_cpus`) before JAX starts its thread pools, and
   limits the native BLAS/OpenMP pools to that many threads;
5. to compile, a process that primed XLA's compiler (:func:`prime_compiler`) may borrow one more core that is
   idle and unclaimed for a few seconds (:func:`borrowed_cpu`); a process claiming cores meanwhile waits for
   it (:data:`BORROW_WAIT_S`) instead of sharing a core for the rest of its run.

The command line does this for every command (``--cpus``, docs/design.md); the Python API leaves the process
alone unless the user calls :func:`claim_cpus`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

from ._threads import limit_native_threads, limit_xla_threads

#: environment variable naming the folder of the per-core lock files
LOCK_ENV = "BAYES_ATTN_LOCK_DIR"

_HELD: dict[int, int] = {}  # cpu -> file descriptor holding its lock, for the life of the process
_CLAIM: dict[str, tuple] = {}  # "cpus": the claimed cores; "before": the cores allowed before the claim pinned
_PRIMED: list[bool] = []  # [True] once XLA's compiler threads were sized for the cores allowed before the claim

#: how long a process that finds every core claimed waits for one that another process has only borrowed
#: (:func:`borrowed_cpu`; a borrow lasts one compilation, seconds) before it shares a claimed core instead
BORROW_WAIT_S = 30.0


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity mask: a container's or a batch job's share)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def lock_dir() -> Path:
    """Folder of the per-core lock files: ``$BAYES_ATTN_LOCK_DIR``, else ``<tmp>/bayes_attn-cpus-<uid>``
    (per user: another user's processes are only seen through :func:`cpu_busy`)."""
    value = os.environ.get(LOCK_ENV)
    if value:
        return Path(value).expanduser()
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"bayes_attn-cpus-{uid}"


def _cpu_times() -> dict[int, tuple[int, int]]:
    """``cpu -> (busy, total)`` jiffies since boot, from ``/proc/stat`` (empty where it does not exist)."""
    out = {}
    try:
        with open("/proc/stat") as fh:
            for line in fh:
                if not line.startswith("cpu") or line.startswith("cpu "):
                    continue
                name, *fields = line.split()
                vals = [int(v) for v in fields[:8]]
                idle = vals[3] + (vals[4] if len(vals) > 4 else 0)  # idle + iowait
                out[int(name[3:])] = (sum(vals) - idle, sum(vals))
    except (OSError, ValueError):
        return {}
    return out


def cpu_busy(cpus, interval: float = 0.1) -> dict[int, float]:
    """Fraction of the last ``interval`` seconds each of ``cpus`` spent busy (0 where unknown)."""
    a = _cpu_times()
    time.sleep(interval) if a else None
    b = _cpu_times()
    busy = {}
    for c in cpus:
        if c in a and c in b and b[c][1] > a[c][1]:
            busy[c] = (b[c][0] - a[c][0]) / (b[c][1] - a[c][1])
        else:
            busy[c] = 0.0
    return busy


def _lock(path: Path) -> int | None:
    """A file descriptor holding the exclusive lock of ``path``, or ``None`` where another process holds it."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.set_inheritable(fd, False)
    return fd


def _try_lock(folder: Path, cpu: int) -> bool:
    fd = _lock(folder / f"cpu{cpu}.lock")
    if fd is not None:
        _HELD[cpu] = fd
    return fd is not None


def _borrowed(folder: Path, cpu: int) -> bool:
    """Whether another process holds ``cpu`` only for a while (:func:`borrowed_cpu` marks it so)."""
    fd = _lock(folder / f"cpu{cpu}.borrowed")
    if fd is None:
        return True
    os.close(fd)
    return False


def _wait_for_borrowed(folder: Path, cpus, got: list, n: int) -> None:
    """Claim cores that other processes have only borrowed, waiting up to :data:`BORROW_WAIT_S` for them."""
    deadline = time.monotonic() + BORROW_WAIT_S
    waiting = [c for c in cpus if c not in got and _borrowed(folder, c)]
    while waiting and len(got) < n and time.monotonic() < deadline:
        time.sleep(0.1)
        for c in list(waiting):
            if _try_lock(folder, c):
                got.append(c)
                waiting.remove(c)
            elif not _borrowed(folder, c):  # claimed for good meanwhile
                waiting.remove(c)


def choose_cpus(n: int, *, busy: dict[int, float] | None = None, folder: Path | None = None) -> tuple[int, ...]:
    """Claim ``n`` of the allowed CPUs (steps 1-3 of the module docstring); returns them, sorted.  Cores
    this process holds already count as claimed.  Where locking is impossible (no ``fcntl``, an unwritable
    folder) the least busy cores are returned unlocked."""
    allowed = allowed_cpus()
    n = min(max(int(n), 1), len(allowed))
    busy = cpu_busy(allowed) if busy is None else busy
    order = sorted(allowed, key=lambda c: (busy.get(c, 0.0), c))
    got = [c for c in order if c in _HELD][:n]
    folder = lock_dir() if folder is None else folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for c in order:
            if len(got) >= n:
                break
            if c not in got and _try_lock(folder, c):
                got.append(c)
        if len(got) < n:
            _wait_for_borrowed(folder, order, got, n)
    except (OSError, ImportError):
        pass
    for c in order:  # fewer free cores than asked for: share the least busy ones
        if len(got) >= n:
            break
        if c not in got:
            got.append(c)
    return tuple(sorted(got))


def release_cpus() -> None:
    """Give back every core this process claimed (the locks also go when the process ends)."""
    while _HELD:
        _, fd = _HELD.popitem()
        os.close(fd)


def pin_to_cpus(cpus) -> bool:
    """Pin every thread of this process (and the threads and processes it starts later) to ``cpus``;
    returns whether it could.  Call before the process first runs a JAX computation, so that XLA's thread
    pools start pinned."""
    if not hasattr(os, "sched_setaffinity"):
        return False
    cpus = set(cpus)
    try:
        os.sched_setaffinity(0, cpus)
    except OSError:
        return False
    done: set[int] = set()
    for _ in range(10):  # a thread started by a not-yet-pinned thread meanwhile: go round again
        try:
            tids = {int(t) for t in os.listdir("/proc/self/task")}
        except OSError:
            break
        if tids <= done:
            break
        for tid in tids - done:
            try:
                os.sched_setaffinity(tid, cpus)
            except OSError:  # a thread that has just exited
                pass
        done |= tids
    return True


def claim_cpus(n: int) -> tuple[int, ...] | None:
    """Claim ``n`` cores (:func:`choose_cpus`), pin this process to them and size its native thread pools
    to them; with one core, XLA's Eigen kernels also run on one thread.  ``n`` at least the number of
    allowed cores: nothing is claimed or pinned (``None``), the process keeps every core."""
    allowed = allowed_cpus()
    if n >= len(allowed):
        return None
    cpus = choose_cpus(n)
    if not pin_to_cpus(cpus):
        release_cpus()
        return None
    _CLAIM.update(cpus=cpus, before=tuple(allowed))
    if len(cpus) == 1:
        limit_xla_threads()
    limit_native_threads(len(cpus))
    return cpus


def _spare_cpus() -> list[int]:
    """The cores this process could use before its claim pinned it and did not claim (none without a claim)."""
    return [c for c in _CLAIM.get("before", ()) if c not in _CLAIM["cpus"]]


def prime_compiler() -> bool:
    """Size XLA's compiler threads for the cores this process could use before its claim, so that a compilation
    can use a core the process borrows (:func:`borrowed_cpu`); returns whether it did.  XLA compiles a program
    with a pool of threads that it sizes, at the process's first compilation, for the cores the process may use
    then: pinned to one core, every later compilation runs on one thread, even with more cores allowed (development
    measurement, docs/design.md "Compiling on a borrowed core").  This starts JAX's backend pinned (its run-time
    thread pools stay sized for the claim: started with every core allowed, they made each small call twice as
    slow on one core), then compiles a one-line program with the process's threads allowed every core they had,
    and pins them back.  Call it once, after the claim and after the process has chosen its JAX devices (it
    starts JAX's backend), before any other computation; a process that never claimed, or claimed every core,
    is left alone."""
    if _PRIMED or not _spare_cpus():
        return bool(_PRIMED)
    import jax

    jax.devices()  # the backend and its run-time thread pools start pinned, sized for the claim
    pin_to_cpus(_CLAIM["before"])
    try:
        jax.jit(lambda x: x + 1)(0.0).block_until_ready()
    finally:
        pin_to_cpus(_CLAIM["cpus"])
    _PRIMED.append(True)
    return True


@contextlib.contextmanager
def borrowed_cpu(max_busy: float = 0.5):
    """One more core for this process while the block runs -- meant for compiling, whose threads then use it
    (:func:`prime_compiler`) -- yielding it, or ``None`` where nothing changes: a process that never claimed
    or was not primed, or no core that is both unclaimed (its lock is taken for the block) and less than
    ``max_busy`` busy a moment ago.  Every thread is pinned back to the claim afterwards.  A process claiming
    cores meanwhile waits for a borrowed core (:data:`BORROW_WAIT_S`) rather than share one for good, and two
    processes started together on two cores each hold one and borrow nothing."""
    cpus, spare = _CLAIM.get("cpus", ()), _spare_cpus()
    if not _PRIMED or not spare:
        yield None
        return
    busy = cpu_busy(spare, interval=0.05)
    folder, held, cpu = lock_dir(), [], None
    try:
        for c in sorted(spare, key=lambda c: (busy.get(c, 0.0), c)):
            if busy.get(c, 0.0) >= max_busy:
                break
            marker = _lock(folder / f"cpu{c}.borrowed")
            if marker is None:
                continue
            held.append(marker)  # given back in the finally below, whatever happens next
            fd = _lock(folder / f"cpu{c}.lock")
            if fd is None:
                os.close(held.pop())
                continue
            held.append(fd)
            cpu = c
            break
        if cpu is not None and not pin_to_cpus((*cpus, cpu)):
            cpu = None
    except (OSError, ImportError):
        cpu = None
    try:
        yield cpu
    finally:
        if cpu is not None:
            pin_to_cpus(cpus)
        for fd in reversed(held):
            os.close(fd)


__all__ = [
    "BORROW_WAIT_S",
    "prime_compiler",
    "borrowed_cpu",
    "LOCK_ENV",
    "allowed_cpus",
    "lock_dir",
    "cpu_busy",
    "choose_cpus",
    "release_cpus",
    "pin_to_cpus",
    "limit_native_threads",
    "claim_cpus",
]
