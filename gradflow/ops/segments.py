"""Segment reductions: the rows of ``data`` reduced per segment id.

Three families, as in TensorFlow:

- sorted (``segment_*``): 1-D ids in increasing order; ``ids[-1] + 1`` output rows, empty
  segments give 0 (1 for ``segment_prod``);
- unsorted (``unsorted_segment_*``): ids of any order whose shape is a prefix of data's,
  ``num_segments`` output rows, negative ids dropped; empty segments give the
  reduction's identity (the dtype's lowest / highest value for max / min);
- sparse (``sparse_segment_*``): like sorted, over the rows ``data[indices]``.

``unsorted_segment_sum`` lives with the array ops: it is how IndexedSlices densify.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.registry import RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.array import (gather, gather_dim, gather_segment_rows, infer_unsorted_segment,
                                ones_like, shape_of_input, unsorted_segment_kernel,
                                unsorted_segment_sum, with_trailing_ones, zeros_like)
from gradflow.ops.common import (FLOATING, NUMERIC, REAL_NUMERIC, TRAINABLE, apply_op, as_tensor,
                                 check_dtype_in, constructor, static_ints)
from gradflow.ops.math import (cast, conj, divide, equal, greater, maximum, multiply, pow,
                               select_v2)

__all__ = [
    "segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod",
    "unsorted_segment_mean", "unsorted_segment_sqrt_n", "unsorted_segment_max",
    "unsorted_segment_min", "unsorted_segment_prod", "sparse_segment_sum",
    "sparse_segment_mean", "sparse_segment_sqrt_n",
]

_INDEX_TYPES = (dtypes.int32, dtypes.int64)


def _lowest(dtype: np.dtype):
    return np.finfo(dtype).min if dtype.kind in "fc" else np.iinfo(dtype).min


def _highest(dtype: np.dtype):
    return np.finfo(dtype).max if dtype.kind in "fc" else np.iinfo(dtype).max


# reduction -> (ufunc, value of an empty unsorted segment for a dtype)
_REDUCTIONS = {
    "Sum": (np.add, lambda dtype: 0),
    "Prod": (np.multiply, lambda dtype: 1),
    "Max": (np.maximum, _lowest),
    "Min": (np.minimum, _highest),
}


def _check_increasing(ids: np.ndarray) -> None:
    """InvalidArgumentError unless ``ids`` are non-negative and sorted."""
    if ids.size and ids[0] < 0:
        raise errors.InvalidArgumentError(
            None, None, f"Segment id {ids[0]} out of range, possibly because 'segment_ids' "
            "input is not sorted.")
    if np.any(np.diff(ids) < 0):
        raise errors.InvalidArgumentError(None, None, "segment ids are not increasing")


def _segment_count(ids: np.ndarray) -> int:
    return int(ids[-1]) + 1 if ids.size else 0


def _row_divided(sums: np.ndarray, counts: np.ndarray, scale: Callable) -> np.ndarray:
    """Each row of ``sums`` divided by ``scale`` of its count (empty rows stay 0)."""
    divisor = scale(np.maximum(counts, 1)).reshape((-1,) + (1,) * (sums.ndim - 1))
    return (sums / divisor).astype(sums.dtype, copy=False)


def _check_segment_ids(ids: Tensor, op_type: str) -> None:
    check_dtype_in(ids, _INDEX_TYPES, op_type, "segment_ids")
    if ids.shape.ndims not in (None, 1):
        raise ValueError(f"segment_ids of {op_type} must be 1-D, got shape {ids.shape} "
                         f"({ids.name})")


def _static_segment_count(ids: Tensor) -> Optional[int]:
    """The number of output rows of a sorted segment op, if the ids are constant."""
    known = static_ints(ids)
    if known is None:
        return None
    if any(b < a for a, b in zip(known, known[1:])) or (known and known[0] < 0):
        raise ValueError(f"segment ids are not increasing (or negative): {known} ({ids.name})")
    return known[-1] + 1 if known else 0


# ------------------------------------------------------------------ sorted segments
def _infer_segment(inputs, attrs):
    data, ids = inputs
    _check_segment_ids(ids, "Segment")
    if data.shape.ndims == 0:
        raise ValueError(f"data of a segment reduction must be at least 1-D, got the scalar "
                         f"{data.name}")
    if not data.shape[:1].is_compatible_with(ids.shape):
        raise ValueError(f"segment_ids should be the same size as dimension 0 of input: "
                         f"{ids.name} has shape {ids.shape}, {data.name} has shape "
                         f"{data.shape}")
    rows = TensorShape([_static_segment_count(ids)])
    return [(data.dtype, rows.concatenate(data.shape[1:]))]


def _sorted_kernel(reduction: str) -> Callable:
    """Kernel of ``Segment<reduction>``: empty segments give 0 (Prod: 1)."""
    ufunc, initial = _REDUCTIONS[reduction]
    reduce_rows = unsorted_segment_kernel(ufunc, initial)

    def kernel(data, ids):
        if ids.shape != data.shape[:1]:
            raise ValueError("segment_ids should be the same size as dimension 0 of input.")
        _check_increasing(ids)
        count = _segment_count(ids)
        out = reduce_rows(data, ids, count)
        if reduction in ("Max", "Min"):
            out[np.bincount(ids, minlength=count) == 0] = 0
        return out
    return kernel


_SORTED_KERNELS = {reduction: _sorted_kernel(reduction) for reduction in _REDUCTIONS}


def _segment_mean_kernel(data, ids):
    sums = _SORTED_KERNELS["Sum"](data, ids)
    return _row_divided(sums, np.bincount(ids, minlength=sums.shape[0]), lambda n: n)


for _reduction, _kernel in _SORTED_KERNELS.items():
    define_op(f"Segment{_reduction}", infer=_infer_segment, kernel=_kernel)
define_op("SegmentMean", infer=_infer_segment, kernel=_segment_mean_kernel)


def _segment_op(op_type: str, allowed) -> Callable:
    """The public constructor of a sorted segment reduction."""
    @constructor(op_type, "data", "segment_ids")
    def build(data, segment_ids, name: Optional[str] = None) -> Tensor:
        data_t = convert_to_tensor(data, name="data")
        check_dtype_in(data_t, allowed, op_type, "data")
        ids = as_tensor(segment_ids, name="segment_ids", like=data_t)
        return apply_op(op_type, [data_t, ids], name=name or op_type)

    build.__name__ = f"segment_{op_type[len('Segment'):].lower()}"
    build.__doc__ = (f"``{op_type}`` of the rows of ``data`` per segment; "
                     "``segment_ids`` are sorted, one per row.")
    return build


segment_sum = _segment_op("SegmentSum", NUMERIC)
segment_mean = _segment_op("SegmentMean", NUMERIC)
segment_prod = _segment_op("SegmentProd", NUMERIC)
segment_max = _segment_op("SegmentMax", REAL_NUMERIC)
segment_min = _segment_op("SegmentMin", REAL_NUMERIC)


# ---------------------------------------------------------------- unsorted segments
for _reduction in ("Prod", "Max", "Min"):
    _ufunc, _initial = _REDUCTIONS[_reduction]
    define_op(f"UnsortedSegment{_reduction}", infer=infer_unsorted_segment,
              kernel=unsorted_segment_kernel(_ufunc, _initial))


def _unsorted_segment_op(op_type: str, allowed) -> Callable:
    """The public constructor of an unsorted segment reduction."""
    @constructor(op_type, "data", "segment_ids", "num_segments")
    def build(data, segment_ids, num_segments, name: Optional[str] = None) -> Tensor:
        data_t, ids, num = _unsorted_operands(data, segment_ids, num_segments)
        check_dtype_in(data_t, allowed, op_type, "data")
        return apply_op(op_type, [data_t, ids, num], name=name or op_type)

    build.__name__ = f"unsorted_segment_{op_type[len('UnsortedSegment'):].lower()}"
    build.__doc__ = (f"``{op_type}`` of the rows of ``data`` into ``num_segments`` "
                     "segments; rows with negative ids are dropped.")
    return build


def _unsorted_operands(data, segment_ids, num_segments) -> tuple[Tensor, Tensor, Tensor]:
    data_t = convert_to_tensor(data)
    ids = as_tensor(segment_ids, name="segment_ids", like=data_t)
    num = as_tensor(num_segments, dtype=None if isinstance(num_segments, Tensor) else
                    (ids.dtype if ids.dtype in _INDEX_TYPES else dtypes.int32),
                    name="num_segments", like=data_t)
    return data_t, ids, num


unsorted_segment_prod = _unsorted_segment_op("UnsortedSegmentProd", NUMERIC)
unsorted_segment_max = _unsorted_segment_op("UnsortedSegmentMax", REAL_NUMERIC)
unsorted_segment_min = _unsorted_segment_op("UnsortedSegmentMin", REAL_NUMERIC)


def _unsorted_normalized(data, segment_ids, num_segments, name: str,
                         scale: Callable[[Tensor], Tensor]) -> Tensor:
    """The unsorted segment sum with each segment divided by ``scale(its row count)``."""
    with get_default_graph().name_scope(name):
        data_t, ids, num = _unsorted_operands(data, segment_ids, num_segments)
        check_dtype_in(data_t, TRAINABLE, name, "data")
        sums = unsorted_segment_sum(data_t, ids, num)
        counts = unsorted_segment_sum(ones_like(ids, dtype=data_t.dtype), ids, num)
        divisor = scale(maximum(counts, constant(1, dtype=data_t.dtype)))
        return divide(sums, with_trailing_ones(divisor, sums))


@constructor("UnsortedSegmentMean", "data", "segment_ids", "num_segments", single_op=False)
def unsorted_segment_mean(data, segment_ids, num_segments, name: Optional[str] = None) -> Tensor:
    """The mean of the rows of each segment (0 for empty segments); negative ids dropped."""
    return _unsorted_normalized(data, segment_ids, num_segments,
                                name or "UnsortedSegmentMean", lambda n: n)


@constructor("UnsortedSegmentSqrtN", "data", "segment_ids", "num_segments", single_op=False)
def unsorted_segment_sqrt_n(data, segment_ids, num_segments,
                            name: Optional[str] = None) -> Tensor:
    """The sum of each segment divided by the square root of its row count."""
    return _unsorted_normalized(data, segment_ids, num_segments,
                                name or "UnsortedSegmentSqrtN", _sqrt)


def _sqrt(t: Tensor) -> Tensor:
    return pow(t, constant(0.5, dtype=t.dtype))


# ------------------------------------------------------------------------ gradients
class _Segments:
    """The row <-> segment maps of one segment op, for its gradient."""

    def __init__(self, op):
        self.op = op
        self.ids = op.inputs[1]
        self.sorted = op.type.startswith("Segment")

    def sum(self, values: Tensor) -> Tensor:
        """Per-segment sums of row values (rows of negative ids dropped)."""
        if self.sorted:
            return segment_sum(values, self.ids)
        return unsorted_segment_sum(values, self.ids, self.op.inputs[2])

    def prod(self, values: Tensor) -> Tensor:
        if self.sorted:
            return segment_prod(values, self.ids)
        return unsorted_segment_prod(values, self.ids, self.op.inputs[2])

    def rows(self, values: Tensor) -> Tensor:
        """Each row's segment entry of ``values`` (zeros for rows of negative ids)."""
        if self.sorted:
            return gather(values, self.ids)
        return gather_segment_rows(values, self.ids)

    def grads(self, data_grad: Tensor) -> list:
        return [data_grad] + [None] * (len(self.op.inputs) - 1)


@RegisterGradient("SegmentSum")
def _segment_sum_grad(op, grad):
    return gather(grad, op.inputs[1]), None


@RegisterGradient("SegmentMean")
def _segment_mean_grad(op, grad):
    data, ids = op.inputs
    counts = segment_sum(ones_like(ids, dtype=grad.dtype), ids)
    counts = maximum(counts, constant(1, dtype=grad.dtype))
    return gather(divide(grad, with_trailing_ones(counts, grad)), ids), None


def _min_max_grad(op, grad):
    """The gradient goes to the rows equal to their segment's extremum, shared among ties."""
    segments = _Segments(op)
    data = op.inputs[0]
    selected = equal(data, segments.rows(op.outputs[0]))
    counts = segments.sum(cast(selected, grad.dtype))
    share = divide(grad, maximum(counts, constant(1, dtype=grad.dtype)))
    return segments.grads(select_v2(selected, segments.rows(share), zeros_like(data)))


def _prod_grad(op, grad):
    """d prod / d x_i: the product of the other rows, computed without dividing by zero."""
    segments = _Segments(op)
    data = op.inputs[0]
    is_zero = equal(data, zeros_like(data))
    zero_counts = segments.sum(cast(is_zero, dtypes.int32))
    # two or more zeros in a segment: every partial derivative vanishes
    grad = select_v2(greater(zero_counts, constant(1, dtype=dtypes.int32)),
                     zeros_like(grad), grad)
    safe = select_v2(is_zero, ones_like(data), data)
    others = select_v2(is_zero, segments.rows(segments.prod(safe)),
                       divide(segments.rows(op.outputs[0]), safe))
    if data.dtype.is_complex:
        others = conj(others)
    return segments.grads(multiply(segments.rows(grad), others))


for _reduction in ("Max", "Min"):
    RegisterGradient(f"Segment{_reduction}")(_min_max_grad)
    RegisterGradient(f"UnsortedSegment{_reduction}")(_min_max_grad)
RegisterGradient("SegmentProd")(_prod_grad)
RegisterGradient("UnsortedSegmentProd")(_prod_grad)


# ------------------------------------------------------------------ sparse segments
def _infer_sparse_segment(inputs, attrs):
    data, indices, ids = inputs[:3]
    check_dtype_in(indices, _INDEX_TYPES, "SparseSegment", "indices")
    _check_segment_ids(ids, "SparseSegment")
    if indices.shape.ndims not in (None, 1) or not indices.shape.is_compatible_with(ids.shape):
        raise ValueError(f"indices ({indices.name}, shape {indices.shape}) and segment_ids "
                         f"({ids.name}, shape {ids.shape}) of a sparse segment reduction must "
                         "be 1-D of one length")
    if data.shape.ndims == 0:
        raise ValueError(f"data of a sparse segment reduction must be at least 1-D, got the "
                         f"scalar {data.name}")
    if len(inputs) == 4:
        check_dtype_in(inputs[3], _INDEX_TYPES, "SparseSegment", "num_segments")
        if inputs[3].shape.ndims not in (None, 0):
            raise ValueError(f"num_segments must be a scalar, got shape {inputs[3].shape}")
        rows = static_ints(inputs[3])
        rows = None if rows is None else rows[0]
    else:
        rows = _static_segment_count(ids)
    return [(data.dtype, TensorShape([rows]).concatenate(data.shape[1:]))]


def _sparse_segment_kernel(scale: Optional[Callable]) -> Callable:
    """Kernel of a sparse segment sum, each segment divided by ``scale(count)`` if given."""
    def kernel(data, indices, ids, num_segments=None, *, sparse_gradient):
        limit = data.shape[0]
        bad = (indices < 0) | (indices >= limit)
        if bad.any():
            position = int(np.argmax(bad))
            raise errors.InvalidArgumentError(
                None, None, f"Bad: indices[{position}] == {indices[position]} out of range "
                f"[0, {limit})")
        _check_increasing(ids)
        count = _segment_count(ids) if num_segments is None else int(num_segments)
        if ids.size and ids[-1] >= count:
            raise errors.InvalidArgumentError(
                None, None, f"segment ids must be < num_segments: {ids[-1]} >= {count}")
        out = np.zeros((count,) + data.shape[1:], data.dtype)
        np.add.at(out, ids, data[indices])
        if scale is None:
            return out
        return _row_divided(out, np.bincount(ids, minlength=count), scale)
    return kernel


_SPARSE_REDUCTIONS = {  # name -> (divisor of a segment with n rows, allowed dtypes)
    "Sum": (None, REAL_NUMERIC), "Mean": (lambda n: n, FLOATING), "SqrtN": (np.sqrt, FLOATING)}
for _reduction, (_scale, _) in _SPARSE_REDUCTIONS.items():
    define_op(f"SparseSegment{_reduction}", infer=_infer_sparse_segment,
              kernel=_sparse_segment_kernel(_scale))


def _sparse_segment_grad(op, grad, row_scale: Optional[Callable]) -> list:
    """Row ``indices[j]`` of data receives the gradient of segment ``ids[j]`` (scaled).

    With ``sparse_gradient`` the result is IndexedSlices over ``indices`` (repeated
    indices add up), otherwise a dense tensor like ``data``.
    """
    data, indices, ids = op.inputs[:3]
    grad = convert_to_tensor(grad)
    values = gather(grad, ids)
    if row_scale is not None:
        counts = unsorted_segment_sum(ones_like(ids, dtype=grad.dtype), ids,
                                      gather_dim(op.outputs[0], 0))
        scale = row_scale(maximum(counts, constant(1, dtype=grad.dtype)))
        values = divide(values, with_trailing_ones(gather(scale, ids), values))
    if op.get_attr("sparse_gradient"):
        data_grad = IndexedSlices(values, indices, shape_of_input(data))
    else:
        data_grad = unsorted_segment_sum(values, indices, gather_dim(data, 0))
    return [data_grad] + [None] * (len(op.inputs) - 1)


RegisterGradient("SparseSegmentSum")(lambda op, grad: _sparse_segment_grad(op, grad, None))
RegisterGradient("SparseSegmentMean")(
    lambda op, grad: _sparse_segment_grad(op, grad, lambda n: n))
RegisterGradient("SparseSegmentSqrtN")(lambda op, grad: _sparse_segment_grad(op, grad, _sqrt))


def _sparse_segment_op(reduction: str) -> Callable:
    """The public constructor of ``SparseSegment<reduction>``."""
    op_type = f"SparseSegment{reduction}"
    allowed = _SPARSE_REDUCTIONS[reduction][1]

    @constructor(op_type, "data", "indices", "segment_ids", "num_segments")
    def build(data, indices, segment_ids, name: Optional[str] = None, num_segments=None,
              sparse_gradient: bool = False) -> Tensor:
        data_t = convert_to_tensor(data)
        check_dtype_in(data_t, allowed, op_type, "data")
        inputs = [data_t, as_tensor(indices, name="indices", like=data_t),
                  as_tensor(segment_ids, name="segment_ids", like=data_t)]
        if num_segments is not None:
            inputs.append(as_tensor(num_segments, dtype=None if isinstance(
                num_segments, Tensor) else inputs[2].dtype, like=data_t))
        return apply_op(op_type, inputs, name=name or op_type,
                        sparse_gradient=bool(sparse_gradient))

    build.__name__ = f"sparse_segment_{reduction.lower()}"
    build.__doc__ = (f"{reduction} over sorted segments of the rows ``data[indices]``; "
                     "``sparse_gradient`` makes the gradient for ``data`` IndexedSlices.")
    return build


sparse_segment_sum = _sparse_segment_op("Sum")
sparse_segment_mean = _sparse_segment_op("Mean")
sparse_segment_sqrt_n = _sparse_segment_op("SqrtN")
