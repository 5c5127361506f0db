#!/usr/bin/env bash
# The hidden-Markov 4-path reproduction (the main job, scripts/main.sh; docs/theory.md §9.1, docs/results.md):
# theory at 7 widths x 5 temperatures (T chosen on a validation set) and GP baselines; the sampled widths
# N = 10, 30, 100, 1000 at the selected temperature run as ONE sweep (bayes_attn.sweep on a Dask
# LocalCluster, one worker per core; resumable: re-running finishes or reuses every cell); then every
# cell's diagnostics, the theory-vs-sampled comparison and HTML report of the sweep, and the figures (these two
# branches side by side, one core each).
set -euo pipefail
runs="${RUN_DIR:-runs}"
figs="${FIG_DIR:-$runs/figures}"
export RUN_DIR="$runs" FIG_DIR="$figs"
mkdir -p "$runs" "$figs"
python examples/markov_accuracy_vs_width.py --config configs/markov_main.toml
# Two independent branches side by side, one core each (every process claims its own), each ONE Python process
# (its imports and compiled programs shared by its parts): two figure scripts and then the theory-vs-sampled
# comparison; the diagnostics of every cell, the HTML report and the third figure script.  Split so that the two
# take about as long (the comparison is the longest part).  The first branch's output is printed after both
# have finished; a failure in either fails the job.
sweep="$runs/markov4/sweep"
(
  python - "$sweep" "$runs/markov4/compare" <<'PY'
import runpy
import sys

from bayes_attn._cpus import claim_cpus

claim_cpus(1)
sweep, out = sys.argv[1:3]
sys.path.insert(0, "examples")
for script in ("markov_u_heatmaps.py", "markov_path_kernels.py"):
    sys.argv = [script]
    runpy.run_path(f"examples/{script}", run_name="__main__")
from bayes_attn.cli import main

sys.exit(main(["compare", sweep, "--out", out]))
PY
) > "$runs/figures_compare.log" 2>&1 &
branch=$!
# every cell in one `diagnose` (each under its "== file" header), then the report, then the kernel-alignment figure
python - "$sweep" "$runs/markov4/report.html" "$sweep"/cells/*[0-9].nc <<'PY'
import runpy
import sys

from bayes_attn._cpus import claim_cpus

claim_cpus(1)
sweep, report, *cells = sys.argv[1:]
from bayes_attn.cli import main

rc = main(["diagnose", *cells])
if rc:
    sys.exit(rc)
rc = main(["report", sweep, "--out", report])
if rc:
    sys.exit(rc)
sys.path.insert(0, "examples")
sys.argv = ["markov_kernel_alignment.py"]
runpy.run_path("examples/markov_kernel_alignment.py", run_name="__main__")
PY
status=0; wait "$branch" || status=$?
cat "$runs/figures_compare.log"
[ "$status" = 0 ] || { echo "error: the figure scripts or compare failed (exit $status; log above)" >&2; exit "$status"; }
echo "figures in $figs; report in $runs/markov4/report.html; theory vs sampled in $runs/markov4/compare"
