"""Contact precision on real protein families (benchmarks/potts_proteins/results.json): per family and pooled
(true contacts summed over the families at each cut, divided by the pairs summed), with each whole command's
wall time and peak memory."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import table  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
METHODS = (
    ("plmdca", "plmDCA (this package)"),
    ("pydca", "pydca 1.23 PlmDCA"),
    ("factored", "factored attention, {heads} heads"),
    ("factored_from_plmdca", "factored attention, {heads} heads, started from plmDCA (seconds: both fits)"),
)
CUTS = ("L/5", "L/2", "L")


def _load():
    p = ROOT / "benchmarks" / "potts_proteins" / "results.json"
    return json.loads(p.read_text()) if p.is_file() else None


def _seconds(fam: dict, m: str) -> float:
    s = fam[m]["seconds"]
    return s + fam["plmdca"]["seconds"] if m == "factored_from_plmdca" else s


def render() -> str:
    res = _load()
    if not res:
        return "_not run: benchmarks/potts_proteins/results.json is missing_\n"
    fams = res["families"]
    out = []
    for key in ("precision", "precision_long_range"):
        rows = []
        for m, template in METHODS:
            have = [f for f in fams if m in fams[f]]
            if not have:
                continue
            heads = sorted({str(fams[f][m].get("chosen", {}).get("heads")) for f in have})
            label = template.format(heads="/".join(heads))
            for f in have:
                e = fams[f][m]
                cuts = e[key]["cuts"]
                rows.append(
                    [
                        label,
                        f,
                        f"{e['M']} x {e['L']}",
                        *(f"{cuts[c]['precision']:.3f}" for c in CUTS),
                        f"{e[key]['baseline']:.3f}",
                        f"{_seconds(fams[f], m):.0f}",
                        f"{e['peak_rss_mb'] / 1024:.2f}",
                    ]
                )
            pooled = [
                sum(fams[f][m][key]["cuts"][c]["true"] for f in have)
                / sum(min(fams[f][m][key]["cuts"][c]["k"], fams[f][m][key]["pairs"]) for f in have)
                for c in CUTS
            ]
            rows.append(
                [
                    f"**{label}**",
                    f"**pooled ({len(have)})**",
                    "",
                    *(f"**{x:.3f}**" for x in pooled),
                    "",
                    f"{sum(_seconds(fams[f], m) for f in have):.0f}",
                    "",
                ]
            )
        sep = "|i - j| >= 6" if key == "precision" else "|i - j| >= 24 (long range)"
        out.append(
            f"Pairs with {sep}:\n\n"
            + table(["method", "family", "M x L", *(f"top {c}" for c in CUTS), "random", "seconds", "peak GB"], rows)
        )
    return "\n".join(out)
