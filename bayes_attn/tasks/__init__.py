"""Data sets: the task container, the hidden-Markov task, user bundles."""

from ._digits import (
    ImageEpisodes,
    digits_episodes,
    image_episodes,
    load_image_arrays,
    with_test_set,
)
from ._bundle import layers_from_arrays, load_bundle, save_bundle, task_from_arrays
from ._markov import (
    MARKOV_CONFIGS,
    MARKOV_PATH_SHORT,
    markov_head_W,
    markov_layers,
    markov_sequences,
    markov_task,
    markov_token_basis,
)
from ._task import SPLITS, Task

__all__ = [
    "Task",
    "SPLITS",
    "markov_task",
    "markov_sequences",
    "markov_head_W",
    "markov_layers",
    "markov_token_basis",
    "MARKOV_CONFIGS",
    "MARKOV_PATH_SHORT",
    "load_bundle",
    "save_bundle",
    "task_from_arrays",
    "layers_from_arrays",
    "ImageEpisodes",
    "digits_episodes",
    "image_episodes",
    "load_image_arrays",
    "with_test_set",
]
