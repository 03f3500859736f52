"""``SparseTensor``: a dense tensor of shape ``dense_shape`` given by its non-zero entries.

``indices`` (int64 ``[N, rank]``) says where the entries ``values`` (``[N]``) sit; every
other element is zero. A plain value class like ``IndexedSlices``: the ops that read
and make sparse tensors live in ``gradflow/ops/sparse_ops.py``. ``Session.run`` fetches
a ``SparseTensor`` as a ``SparseTensorValue`` and feeds one from such a value (or an
``(indices, values, dense_shape)`` tuple).
"""
from __future__ import annotations

import collections
from typing import Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph, name_scope
from gradflow.framework.tensor_shape import TensorShape

__all__ = ["SparseTensor", "SparseTensorValue", "is_sparse"]

SparseTensorValue = collections.namedtuple("SparseTensorValue",
                                           ["indices", "values", "dense_shape"])


class SparseTensor:
    """A sparse tensor: ``values[i]`` at ``indices[i]`` of a ``dense_shape`` tensor."""

    __slots__ = ("_indices", "_values", "_dense_shape")

    def __init__(self, indices, values, dense_shape):
        tensors = _graph_values(indices, values, dense_shape)
        graph = tensors[0].graph if tensors else get_default_graph()
        with graph.atomic(), name_scope(None, "SparseTensor", tensors):
            indices = convert_to_tensor(indices, name="indices", dtype=dtypes.int64)
            values = convert_to_tensor(values, name="values")
            dense_shape = convert_to_tensor(dense_shape, name="dense_shape",
                                            dtype=dtypes.int64)
            _check_components(indices, values, dense_shape)
        self._indices = indices
        self._values = values
        self._dense_shape = dense_shape

    @classmethod
    def from_value(cls, sparse_tensor_value) -> "SparseTensor":
        """A ``SparseTensor`` of constants from a ``SparseTensorValue`` (or a SparseTensor)."""
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        if not isinstance(sparse_tensor_value, SparseTensorValue):
            raise TypeError(f"Neither a SparseTensor nor SparseTensorValue: "
                            f"{sparse_tensor_value!r}.")
        return cls(sparse_tensor_value.indices, sparse_tensor_value.values,
                   sparse_tensor_value.dense_shape)

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def dense_shape(self) -> Tensor:
        return self._dense_shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._values.dtype

    @property
    def op(self):
        return self._values.op

    @property
    def graph(self):
        return self._values.graph

    @property
    def name(self) -> str:
        return self._values.name

    @property
    def shape(self) -> TensorShape:
        """The static dense shape: known entries of ``dense_shape``, else its length."""
        known = constant_value(self._dense_shape)
        if known is not None:
            return TensorShape([None if int(d) < 0 else int(d) for d in known])
        producer = self._dense_shape.op
        if producer.type == "PlaceholderWithDefault":
            default = constant_value(producer.inputs[0])
            if default is not None:
                return TensorShape([None if int(d) < 0 else int(d) for d in default])
        length = self._dense_shape.shape.as_tuple()
        return TensorShape(None) if length is None or length[0] is None else \
            TensorShape([None] * length[0])

    def get_shape(self) -> TensorShape:
        return self.shape

    def consumers(self) -> list:
        """The ops reading any of the three components."""
        seen = {}
        for part in (self._indices, self._values, self._dense_shape):
            for op in part.consumers():
                seen.setdefault(op.name, op)
        return list(seen.values())

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self._indices}, values={self._values}, "
                f"dense_shape={self._dense_shape})")


def is_sparse(value) -> bool:
    """Whether ``value`` is a SparseTensor or a SparseTensorValue."""
    return isinstance(value, (SparseTensor, SparseTensorValue))


def _graph_values(*parts) -> Optional[list]:
    """The parts that are tensors (they choose the graph); None when there are none."""
    tensors = [p for p in parts if isinstance(p, Tensor)]
    return tensors or None


def _check_components(indices: Tensor, values: Tensor, dense_shape: Tensor) -> None:
    """TF's static checks: indices a matrix, values and dense_shape vectors, ranks agree."""
    if indices.shape.ndims not in (None, 2):
        raise ValueError(f"Shape {indices.shape} must have rank 2 (SparseTensor indices "
                         f"{indices.name})")
    if values.shape.ndims not in (None, 1):
        raise ValueError(f"Shape {values.shape} must have rank 1 (SparseTensor values "
                         f"{values.name})")
    if dense_shape.shape.ndims not in (None, 1):
        raise ValueError(f"Shape {dense_shape.shape} must have rank 1 (SparseTensor "
                         f"dense_shape {dense_shape.name})")
    rank = indices.shape.as_tuple()[1] if indices.shape.ndims == 2 else None
    length = dense_shape.shape.as_tuple()[0] if dense_shape.shape.ndims == 1 else None
    if rank is not None and length is not None and rank != length:
        raise ValueError(f"Dimension {rank} in both shapes must be equal, but are {rank} "
                         f"and {length}: the indices of a SparseTensor have one column per "
                         f"dimension of dense_shape ({dense_shape.name})")
    count = indices.shape.as_tuple()[0] if indices.shape.ndims == 2 else None
    entries = values.shape.as_tuple()[0] if values.shape.ndims == 1 else None
    if count is not None and entries is not None and count != entries:
        raise ValueError(f"Dimensions must be equal, but are {count} and {entries}: a "
                         f"SparseTensor needs one value per index row ({values.name})")

