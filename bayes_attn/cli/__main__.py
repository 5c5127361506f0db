"""``python -m bayes_attn.cli ...``: the ``bayes-attn`` command without the console script."""

from . import main

main()
