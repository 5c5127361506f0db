"""The default head count of factored attention on protein families (benchmarks/potts_proteins/heads.json):
the weighted validation PL of each head count on a leak-free split, with its training objective, wall time and
contact precision (reported, not used for the choice)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import table  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def render() -> str:
    p = ROOT / "benchmarks" / "potts_proteins" / "heads.json"
    if not p.is_file():
        return "_not run: benchmarks/potts_proteins/heads.json is missing_\n"
    rows = []
    for name, fam in json.loads(p.read_text())["families"].items():
        best = min(fam["runs"].values(), key=lambda r: r["val_nll"])
        for r in sorted(fam["runs"].values(), key=lambda r: (r["heads"], r["max_iter"])):
            mark = "**" if r is best else ""
            rows.append(
                [
                    f"{name} ({fam['n_train']} + {fam['n_val']})",
                    f"{mark}{r['heads']}{mark}",
                    r["iterations"],
                    f"{mark}{r['val_nll']:.4f}{mark}",
                    f"{r['train_objective']:.4f}",
                    *(f"{r['precision'][c]:.3f}" for c in ("L/5", "L/2", "L")),
                    f"{r['seconds']:.0f}",
                ]
            )
    return table(
        [
            "family (training + validation rows)",
            "heads",
            "iterations",
            "validation PL",
            "training objective",
            "top L/5",
            "top L/2",
            "top L",
            "seconds",
        ],
        rows,
    )
