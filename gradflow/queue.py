"""``gf.queue``: TF1's queue classes (names handed on)."""
from gradflow.ops.data_flow_ops import (  # noqa: F401
    FIFOQueue, PaddingFIFOQueue, PriorityQueue, QueueBase, RandomShuffleQueue)
