"""``gf.data.experimental``: the few TF1 helpers that are thin wrappers of Dataset methods."""
from __future__ import annotations

from typing import Callable, Optional

from gradflow.data.dataset import AUTOTUNE, Dataset

__all__ = ["AUTOTUNE", "unbatch", "shuffle_and_repeat", "map_and_batch"]


def unbatch() -> Callable[[Dataset], Dataset]:
    """For ``dataset.apply``: ``dataset.unbatch()``."""
    return lambda dataset: dataset.unbatch()


def shuffle_and_repeat(buffer_size, count=None, seed: Optional[int] = None
                       ) -> Callable[[Dataset], Dataset]:
    """For ``dataset.apply``: ``shuffle(buffer_size, seed).repeat(count)``."""
    return lambda dataset: dataset.shuffle(buffer_size, seed).repeat(count)


def map_and_batch(map_func: Callable, batch_size, num_parallel_batches=None,
                  drop_remainder: bool = False, num_parallel_calls=None
                  ) -> Callable[[Dataset], Dataset]:
    """For ``dataset.apply``: ``map(map_func).batch(batch_size, drop_remainder)``."""
    parallel = num_parallel_calls if num_parallel_calls is not None else num_parallel_batches
    return lambda dataset: dataset.map(map_func, parallel).batch(batch_size, drop_remainder)
