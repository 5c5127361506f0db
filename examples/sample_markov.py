"""Sample the hidden-Markov 4-path network with the Python API and print its diagnostics.

python examples/sample_markov.py            # P=100, N=10, T=0.01, 4 chains x (500 + 500)
python examples/sample_markov.py --smoke    # tiny, for the test suite
"""

import argparse

import bayes_attn  # noqa: F401  (float64)
from bayes_attn.inference import request_host_devices

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--smoke", action="store_true")
ap.add_argument("--out", default="markov_run.nc")
args = ap.parse_args()
chains = 2 if args.smoke else 4
request_host_devices(chains)  # before any JAX operation

from bayes_attn.diagnostics import format_report, summarize  # noqa: E402
from bayes_attn.inference import SamplerConfig, predictor_statistics, sample, write_run  # noqa: E402
from bayes_attn.tasks import MARKOV_PATH_SHORT, markov_task  # noqa: E402

task = markov_task(P=10 if args.smoke else 100, n_test=8 if args.smoke else 1000, paths=4)
spec = task.spec(width=10, temperature=0.01)
n = 30 if args.smoke else 500
dt = sample(task, spec, SamplerConfig(model="collapsed", chains=chains, warmup=n, draws=n, progress_bar=not args.smoke))
write_run(dt, args.out)
stats = predictor_statistics(dt)
print(f"test accuracy of the posterior-mean predictor: {stats['accuracy']:.3f}")
labels = [MARKOV_PATH_SHORT[p] for p in task.path_labels]
print("posterior mean of U (paths " + ", ".join(labels) + "):")
print(stats["U"].round(3))
print(format_report(summarize(dt), max_rows=3))
