#!/usr/bin/env python
"""Log-log figure of benchmarks/scale/results.json: seconds of one density + gradient and of one solve against P,
for the P x P route and path space (docs/benchmarks.md).

    .venv/bin/python benchmarks/scale/figure.py [--json benchmarks/scale/results.json] [--out docs/figures/scale.png]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "scale" / "results.json")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "figures" / "scale.png")
    a = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = json.loads(a.json.read_text())["rows"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, key, title in zip(axes, ("grad_s", "solve_s"), ("one log-density + gradient", "one saddle-point solve")):
        for route, style in (("dense", "o-"), ("path", "s-")):
            pts = [(r["P"], r["routes"][route][key]) for r in rows if route in r["routes"]]
            if pts:
                ax.loglog(*zip(*pts), style, label="P x P kernel" if route == "dense" else "path space")
        ax.set_xlabel("P = N")
        ax.set_ylabel("seconds")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.out.with_name(a.out.stem + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    tmp.replace(a.out)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
