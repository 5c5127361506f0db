"""Where the test suite's time goes: compilation, tracing, child processes and the rest, file by file.

    python benchmarks/suite/run.py [--all] [--out benchmarks/suite/results.json] [pytest arguments ...]

Runs the README's test command (``python -m pytest -q -n 2``; ``--all``: then the slow set in a second session,
as ``./run.sh test-all`` does) with a plugin (``_profile_plugin.py``) that records, per test, its wall time, the
CPU time of its process and of the child processes it waited for, and JAX's compile events in it: XLA backend
compilations (count and seconds, binned by how long one program took) and tracing + lowering.  Writes the session's wall time and those
sums, in all, per test file and for the slowest tests, and the programs of one second or more by name, to the
JSON file (``--rows FILE``: every test's row too); the table in docs/design.md ("Compilation in
the tests") is generated from it (``scripts/tables/bench_suite.py``).  Arguments after the options go to pytest
(a subset of the tests, for instance).  Run it on an otherwise idle machine: it uses both cores.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from _profile_plugin import BINS  # noqa: E402

#: the slowest tests kept in the JSON file
TOP = 25


def _sum(rows, key):
    return sum(r[key] for r in rows)


def _totals(rows) -> dict:
    """Sums over ``rows`` (tests): wall, compilation by program bin, tracing + lowering, child CPU, and the rest
    (the test's wall time less its compilation, tracing and children: running programs, Python, I/O)."""
    wall = sum(r["end"] - r["start"] for r in rows)
    backend = [sum(r["backend_s"][i] for r in rows) for i in range(len(BINS))]
    trace, children = _sum(rows, "trace_lower_s"), _sum(rows, "children_cpu_s")
    return {
        "tests": len(rows),
        "wall_s": wall,
        "backend_compile_s": sum(backend),
        "backend_compiles": sum(sum(r["backend_n"]) for r in rows),
        "backend_compile_s_by_bin": backend,
        "backend_compiles_by_bin": [sum(r["backend_n"][i] for r in rows) for i in range(len(BINS))],
        "trace_lower_s": trace,
        "children_cpu_s": children,
        "rest_s": wall - sum(backend) - trace - children,
    }


def summarise(rows: list[dict], session_wall_s: float, returncode: int, args: list[str]) -> dict:
    by_file = collections.defaultdict(list)
    for r in rows:
        by_file[r["id"].split("::")[0]].append(r)
    files = sorted(by_file, key=lambda f: -sum(r["end"] - r["start"] for r in by_file[f]))
    workers = collections.defaultdict(list)
    for r in rows:
        workers[r["worker"]].append(r)
    slowest = sorted(rows, key=lambda r: r["start"] - r["end"])[:TOP]
    return {
        "machine": {"cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "pytest_args": args,
        "returncode": returncode,
        "session_wall_s": session_wall_s,
        "bins_s": [b if b != float("inf") else None for b in BINS],
        "total": _totals(rows),
        "workers": {
            w: {"tests": len(rs), "busy_s": sum(r["end"] - r["start"] for r in rs)} for w, rs in sorted(workers.items())
        },
        "files": {f: _totals(by_file[f]) for f in files},
        "slowest": [{"id": r["id"], **_totals([r])} for r in slowest],
        "large_programs": _large_programs(rows),
    }


def _large_programs(rows) -> list[dict]:
    """The programs of the last bin (one compilation >= 1 s) by JAX's name for them: count, seconds and the tests
    that compiled them, most seconds first."""
    by = collections.defaultdict(lambda: {"programs": 0, "seconds": 0.0, "tests": []})
    for r in rows:
        for name, s in r["large"]:
            e = by[name]
            e["programs"] += 1
            e["seconds"] += s
            if r["id"] not in e["tests"]:
                e["tests"].append(r["id"])
    return sorted(({"name": k, **v} for k, v in by.items()), key=lambda e: -e["seconds"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="the slow set too (./run.sh test-all)")
    ap.add_argument("--out", default=str(HERE / "results.json"))
    ap.add_argument("--rows", help="also write every test's row (JSON lines) to this file")
    ap.add_argument("-n", "--workers", default="2", help="pytest-xdist workers (default 2, as ./run.sh test)")
    args, pytest_args = ap.parse_known_args(argv)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "_profile_plugin"]
    cmd += ["-n", args.workers] if args.workers != "0" else []
    # ./run.sh test-all is two sessions: the fast suite (XLA level 0, tests/conftest.py), then the slow set
    sessions = [[], ["-m", "slow", "--dist", "worksteal"]] if args.all else [[]]
    rows, wall, returncode = [], 0.0, 0
    for extra in sessions:
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "BAYES_ATTN_SUITE_PROFILE": tmp}
            env["PYTHONPATH"] = os.pathsep.join([str(HERE)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
            t0 = time.perf_counter()
            proc = subprocess.run(cmd + extra + pytest_args, cwd=ROOT, env=env)
            wall += time.perf_counter() - t0
            returncode = returncode or (0 if proc.returncode == 5 else proc.returncode)  # 5: none selected
            for f in sorted(Path(tmp).glob("*.jsonl")):
                rows += [{**json.loads(line), "worker": f.stem} for line in f.read_text().splitlines() if line]
    if not rows:
        print("error: no test ran", file=sys.stderr)
        return 2
    if args.rows:
        Path(args.rows).write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = summarise(rows, wall, returncode, (["--all"] if args.all else []) + pytest_args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(res, indent=1))
    os.replace(tmp_out, out)
    t = res["total"]
    print(
        f"{t['tests']} tests in {wall:.0f} s (pytest exit {returncode}); of {t['wall_s']:.0f} test-seconds: "
        f"XLA compilation {t['backend_compile_s']:.0f} s ({t['backend_compiles']} programs), tracing + lowering "
        f"{t['trace_lower_s']:.0f} s, child processes {t['children_cpu_s']:.0f} s (CPU), the rest {t['rest_s']:.0f} s;"
        f" wrote {out}"
    )
    return 0 if returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
