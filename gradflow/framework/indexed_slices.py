"""``IndexedSlices``: a sparse gradient, rows ``values[i]`` at ``indices[i]`` of a dense tensor.

Gather-like ops produce these so that a gradient touching a few rows of a large table
never materialises the table. Converting to a dense tensor sums rows that repeat; as
both build ops, ``ops/array/indexing.py`` registers that conversion (beside
``unsorted_segment_sum``) and ``ops/math/products.py`` installs the unary minus.
"""
from __future__ import annotations

import collections
from typing import Optional

from gradflow.framework.constant import constant_value
from gradflow.framework.graph import Tensor
from gradflow.framework.tensor_shape import TensorShape

__all__ = ["IndexedSlices", "IndexedSlicesValue", "LARGE_SPARSE_NUM_ELEMENTS"]

# Densifying at least this many elements warns: it may consume a lot of memory.
LARGE_SPARSE_NUM_ELEMENTS = 100_000_000

IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue",
                                            ["values", "indices", "dense_shape"])


class IndexedSlices:
    """A sparse representation of a dense tensor of shape ``dense_shape``."""

    __slots__ = ("_values", "_indices", "_dense_shape")

    def __init__(self, values: Tensor, indices: Tensor, dense_shape: Optional[Tensor] = None):
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def dense_shape(self) -> Optional[Tensor]:
        return self._dense_shape

    @property
    def name(self) -> str:
        return self._values.name

    @property
    def device(self) -> str:
        return self._values.device

    @property
    def op(self):
        return self._values.op

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def graph(self):
        return self._values.graph

    @property
    def shape(self):
        """The static dense shape, as far as it is known."""
        if self._dense_shape is None:
            return TensorShape(None)
        known = constant_value(self._dense_shape)
        if known is not None:
            return TensorShape([int(d) for d in known])
        rows = self._values.shape
        return TensorShape(None) if rows.ndims is None else \
            TensorShape([None]).concatenate(rows[1:])

    def get_shape(self):
        return self.shape

    def __repr__(self) -> str:
        shape = "None" if self._dense_shape is None else self._dense_shape.name
        return (f"IndexedSlices(indices={self._indices.name}, values={self._values.name}, "
                f"dense_shape={shape})")
