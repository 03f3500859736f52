"""``gf.data.experimental``: the few TF1 helpers that are thin wrappers of Dataset methods."""
from __future__ import annotations

from typing import Callable, Optional

from gradflow.data.dataset import AUTOTUNE, Dataset, interleave_op

__all__ = ["AUTOTUNE", "unbatch", "shuffle_and_repeat", "map_and_batch",
           "parallel_interleave"]


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


def parallel_interleave(map_func: Callable, cycle_length, block_length=1, sloppy: bool = False,
                        buffer_output_elements=None, prefetch_input_elements=None
                        ) -> Callable[[Dataset], Dataset]:
    """For ``dataset.apply``: ``interleave`` whose ``cycle_length`` input datasets are
    read ahead on threads, ``buffer_output_elements`` elements each, with
    ``prefetch_input_elements`` more inputs opened early. The order is the sequential
    interleave's, which ``sloppy=True`` (any order allowed) also accepts."""
    if not isinstance(sloppy, bool):
        raise TypeError(f"sloppy must be a bool, got {type(sloppy).__name__}")
    ahead = block_length if buffer_output_elements is None else buffer_output_elements
    opened = 2 * cycle_length if prefetch_input_elements is None else prefetch_input_elements
    return lambda dataset: interleave_op(
        dataset, map_func, cycle_length, block_length, "LegacyParallelInterleaveDatasetV2",
        buffer_output_elements=ahead, prefetch_input_elements=opened, sloppy=sloppy)
