"""Where the fast suite's time goes (benchmarks/suite/results.json, written by benchmarks/suite/run.py): the whole
session and the test files that take longest, split into XLA compilation, tracing + lowering, child processes and
the rest."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, table  # noqa: E402

#: the files shown (the rest are summed in one row)
FILES = 12


def _row(name, t):
    return [
        name,
        t["tests"],
        f"{t['wall_s']:.0f}",
        f"{t['backend_compile_s']:.0f} ({t['backend_compiles']})",
        f"{t['trace_lower_s']:.0f}",
        f"{t['children_cpu_s']:.0f}",
        f"{t['rest_s']:.0f}",
    ]


def render() -> str:
    return render_file("benchmarks/suite/results.json", "benchmarks/suite/run.py")


def render_file(rel: str, writer: str) -> str:
    """The table of the suite profile ``rel`` (written by ``writer``)."""
    d = load(rel, writer)
    files = list(d["files"].items())
    rows = [_row(f"`{f.removeprefix('tests/')}`", t) for f, t in files[:FILES]]
    rest = files[FILES:]
    if rest:
        keys = ("tests", "wall_s", "backend_compile_s", "backend_compiles", "trace_lower_s", "children_cpu_s", "rest_s")
        rows.append(_row(f"{len(rest)} other files", {k: sum(t[k] for _, t in rest) for k in keys}))
    rows.append(_row("**all**", d["total"]))
    out = table(
        [
            "test file",
            "tests",
            "test-seconds",
            "XLA compilation s (programs)",
            "tracing + lowering s",
            "child processes s (CPU)",
            "the rest s",
        ],
        rows,
    )
    t = d["total"]
    bins = d["bins_s"]
    labels = [f"< {bins[0] * 1000:.0f} ms"] + [
        f"{lo * 1000:.0f} ms – {hi:.1f} s" if lo < 1 else f"{lo:.1f} – {hi:.1f} s" for lo, hi in zip(bins, bins[1:-1])
    ]
    labels.append(f"≥ {bins[-2]:.0f} s")
    split = "; ".join(
        f"{lab}: {n} programs, {s:.0f} s"
        for lab, n, s in zip(labels, t["backend_compiles_by_bin"], t["backend_compile_s_by_bin"])
    )
    busy = ", ".join(f"{w} {v['busy_s']:.0f} s" for w, v in d["workers"].items())
    m = d["machine"]
    extra = [a for a in d["pytest_args"] if a != "--all"]
    args = "The fast suite" + (" and the slow set" if "--all" in d["pytest_args"] else "")
    args += f" (`{' '.join(extra)}`)" if extra else ""
    return out + (
        f"\n{args}: {t['tests']} tests in {d['session_wall_s']:.0f} s of wall time on {m['cores']} cores "
        f"(workers busy: {busy}). A test's XLA compilation by the time one program took: {split}. "
        f"The rest is running the programs, Python and I/O. (Python {m['python']})\n"
    )
