"""Set operations over the last dimension (TF1's ``tf.sets``), under TF's op type names.

``DenseToDenseSetOperation``, ``DenseToSparseSetOperation`` and
``SparseToSparseSetOperation`` treat each row of their inputs (the last dimension,
indexed by the leading ones) as a set and give, per row, the sorted ``intersection``,
``union``, ``a-b`` or ``b-a`` as a SparseTensor ``[batch..., max_row_size]``; ``SetSize``
counts each row's distinct values of a SparseTensor. Integer and string values; no
gradients (TF has none).
"""
from __future__ import annotations

import itertools
from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import get_default_graph
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.sparse_tensor import SparseTensor
from gradflow.framework.tensor_shape import TensorShape

__all__ = ["set_size", "set_intersection", "set_union", "set_difference"]

_SET_TYPES = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8,
              dtypes.uint16, dtypes.string)
_OPERATIONS = ("intersection", "union", "a-b", "b-a")


def _dense_rows(values: np.ndarray) -> tuple[tuple, dict]:
    """The batch shape of a dense input and its rows as sets, by batch index."""
    values = np.asarray(values)
    batch = values.shape[:-1]
    rows = values.reshape(-1, values.shape[-1]) if values.size else \
        np.zeros((int(np.prod(batch)), 0), values.dtype)
    return tuple(batch), {index: set(row.tolist()) for index, row in
                          zip(itertools.product(*(range(d) for d in batch)), rows,
                              strict=True)}


def _sparse_rows(indices, values, shape) -> tuple[tuple, dict]:
    """The batch shape of a sparse input and its rows' value sets, by batch index."""
    rows: dict = {}
    for index, value in zip(np.asarray(indices).tolist(), np.asarray(values).tolist(),
                            strict=True):
        rows.setdefault(tuple(index[:-1]), set()).add(value)
    return tuple(int(d) for d in np.asarray(shape)[:-1]), rows


def _combine(a: set, b: set, operation: str) -> set:
    if operation == "intersection":
        return a & b
    if operation == "union":
        return a | b
    return a - b if operation == "a-b" else b - a


def _set_result(batch_a: tuple, rows_a: dict, batch_b: tuple, rows_b: dict, operation: str,
                dtype: dtypes.DType):
    if batch_a != batch_b:
        raise errors.InvalidArgumentError(
            None, None, f"Shapes {list(batch_a)} and {list(batch_b)} do not match in their "
                        "leading dimensions.")
    indices, values, widest = [], [], 0
    for index in itertools.product(*(range(d) for d in batch_a)):
        members = sorted(_combine(rows_a.get(index, set()), rows_b.get(index, set()),
                                  operation))
        widest = max(widest, len(members))
        indices.extend(list(index) + [j] for j in range(len(members)))
        values.extend(members)
    rank = len(batch_a) + 1
    out_values = np.array(values, dtype=object) if dtype is dtypes.string else \
        np.array(values, dtype=dtype.as_numpy_dtype)
    return (np.array(indices, dtype=np.int64).reshape(-1, rank), out_values,
            np.array(list(batch_a) + [widest], dtype=np.int64))


def _outputs(rank: Optional[int], dtype: dtypes.DType) -> list:
    return [(dtypes.int64, TensorShape([None, rank])), (dtype, TensorShape([None])),
            (dtypes.int64, TensorShape([rank]))]


def _infer_dense_dense(inputs, attrs):
    a, b = (t.shape for t in inputs)
    op_name = "DenseToDenseSetOperation"
    for shape in (a, b):
        if shape.ndims is not None and shape.ndims < 2:
            raise ValueError(f"Shape must be at least rank 2 but is rank {shape.ndims} for "
                             f"'{op_name}' with input shapes: {a}, {b}.")
    if a.ndims is not None and b.ndims is not None:
        if a.ndims != b.ndims:
            raise ValueError(f"Shape must be rank {a.ndims} but is rank {b.ndims} for "
                             f"'{op_name}' with input shapes: {a}, {b}.")
        lead_a, lead_b = a.as_list()[:-1], b.as_list()[:-1]
        for i, (x, y) in enumerate(zip(lead_a, lead_b, strict=True)):
            if x is not None and y is not None and x != y:
                raise ValueError(f"Dimension {i} in both shapes must be equal, but are {x} and "
                                 f"{y}. Shapes are {_dims(lead_a)} and {_dims(lead_b)}. for "
                                 f"'{op_name}' with input shapes: {a}, {b}.")
    return _outputs(a.ndims if a.ndims is not None else b.ndims, inputs[0].dtype)


def _dims(dims: list) -> str:
    """Dimensions as TF's messages print them: ``[2,?]``."""
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _dense_dense_kernel(a, b, *, set_operation: str, T, **_):
    batch_a, rows_a = _dense_rows(a)
    batch_b, rows_b = _dense_rows(b)
    return _set_result(batch_a, rows_a, batch_b, rows_b, set_operation, T)


def _infer_dense_sparse(inputs, attrs):
    a = inputs[0].shape
    return _outputs(a.ndims, inputs[0].dtype)


def _dense_sparse_kernel(a, b_indices, b_values, b_shape, *, set_operation: str, T, **_):
    batch_a, rows_a = _dense_rows(a)
    batch_b, rows_b = _sparse_rows(b_indices, b_values, b_shape)
    return _set_result(batch_a, rows_a, batch_b, rows_b, set_operation, T)


def _infer_sparse_sparse(inputs, attrs):
    rank = inputs[0].shape.as_list()[1] if inputs[0].shape.ndims == 2 else None
    return _outputs(rank, inputs[1].dtype)


def _sparse_sparse_kernel(a_indices, a_values, a_shape, b_indices, b_values, b_shape, *,
                          set_operation: str, T, **_):
    batch_a, rows_a = _sparse_rows(a_indices, a_values, a_shape)
    batch_b, rows_b = _sparse_rows(b_indices, b_values, b_shape)
    return _set_result(batch_a, rows_a, batch_b, rows_b, set_operation, T)


def _set_size_kernel(indices, values, shape, **_):
    batch, rows = _sparse_rows(indices, values, shape)
    sizes = np.zeros(batch, dtype=np.int32)
    for index, members in rows.items():
        sizes[index] = len(members)
    return sizes


define_op("DenseToDenseSetOperation", infer=_infer_dense_dense, kernel=_dense_dense_kernel)
define_op("DenseToSparseSetOperation", infer=_infer_dense_sparse, kernel=_dense_sparse_kernel)
define_op("SparseToSparseSetOperation", infer=_infer_sparse_sparse,
          kernel=_sparse_sparse_kernel)
define_op("SetSize", infer=lambda inputs, attrs: [(dtypes.int32, TensorShape(None))],
          kernel=_set_size_kernel)
for _op_type in ("DenseToDenseSetOperation", "DenseToSparseSetOperation",
                 "SparseToSparseSetOperation", "SetSize"):
    NotDifferentiable(_op_type)


def _as_set_input(value, what: str):
    """A SparseTensor as is, anything else as a dense tensor of a supported dtype."""
    if not isinstance(value, SparseTensor):
        value = convert_to_tensor(value, name=what)
    if value.dtype not in _SET_TYPES:
        raise TypeError(f"'{what}' has invalid dtype `<dtype: '{value.dtype.name}'>` not in "
                        "supported dtypes: `" + ", ".join(d.name for d in _SET_TYPES) + "`.")
    return value


def set_size(a, validate_indices: bool = True, name: Optional[str] = None):
    """The number of distinct values in each row (last dimension) of the SparseTensor
    ``a``: an int32 tensor of its leading dimensions."""
    if not isinstance(a, SparseTensor):
        raise TypeError(f"Expected `SparseTensor`, got {a}.")
    _as_set_input(a, "a")
    graph = get_default_graph()
    with graph.atomic():
        return graph.create_op("SetSize", [a.indices, a.values, a.dense_shape],
                               {"T": a.dtype, "validate_indices": bool(validate_indices)},
                               name=name or "SetSize").outputs[0]


def _set_operation(a, b, operation: str, validate_indices: bool) -> SparseTensor:
    graph = get_default_graph()
    with graph.atomic():
        a = _as_set_input(a, "a")
        b = b if isinstance(b, SparseTensor) else convert_to_tensor(b, name="b")
        if a.dtype is not b.dtype:
            raise TypeError(f"Types don't match, <dtype: '{a.dtype.name}'> vs "
                            f"<dtype: '{b.dtype.name}'>.")
        if isinstance(a, SparseTensor) and not isinstance(b, SparseTensor):
            # As TF: the dense operand goes first, a difference turning around.
            a, b = b, a
            operation = {"a-b": "b-a", "b-a": "a-b"}.get(operation, operation)
        attrs = {"T": a.dtype, "set_operation": operation,
                 "validate_indices": bool(validate_indices)}
        if isinstance(a, SparseTensor):
            op = graph.create_op("SparseToSparseSetOperation",
                                 [a.indices, a.values, a.dense_shape,
                                  b.indices, b.values, b.dense_shape], attrs,
                                 name="SparseToSparseSetOperation")
        elif isinstance(b, SparseTensor):
            op = graph.create_op("DenseToSparseSetOperation",
                                 [a, b.indices, b.values, b.dense_shape], attrs,
                                 name="DenseToSparseSetOperation")
        else:
            op = graph.create_op("DenseToDenseSetOperation", [a, b], attrs,
                                 name="DenseToDenseSetOperation")
        return SparseTensor(*op.outputs)


def set_intersection(a, b, validate_indices: bool = True) -> SparseTensor:
    """The sorted values each row of ``a`` shares with the same row of ``b``."""
    return _set_operation(a, b, "intersection", validate_indices)


def set_union(a, b, validate_indices: bool = True) -> SparseTensor:
    """The sorted values in each row of ``a`` or of ``b``."""
    return _set_operation(a, b, "union", validate_indices)


def set_difference(a, b, aminusb: bool = True, validate_indices: bool = True) -> SparseTensor:
    """The sorted values of each row of ``a`` not in ``b`` (``b`` not in ``a`` when
    ``aminusb`` is False)."""
    return _set_operation(a, b, "a-b" if aminusb else "b-a", validate_indices)
