"""Bucketing values: ``searchsorted`` (``LowerBound``/``UpperBound``) and
``histogram_fixed_width`` (``HistogramFixedWidth``), under TF's type names.

``LowerBound``/``UpperBound`` take 2-D ``sorted_inputs`` ``[rows, n]`` and ``values``
``[rows, m]`` and give, per row, the insertion index of each value (before equal
entries, or after them); ``searchsorted`` reshapes N-D inputs to 2-D around them, as TF
does (its result is the ``Reshape`` of the op's output). ``HistogramFixedWidth`` counts
values in ``nbins`` equal bins over ``value_range``, values outside it falling into the
first or last bin. None of them has a gradient.
"""
from __future__ import annotations

import contextlib
from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.registry import NotDifferentiable, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import REAL_NUMERIC, graph_for, static_ints
from gradflow.ops.primitives import reshape
from gradflow.ops.primitives import shape as shape_of

__all__ = ["searchsorted", "histogram_fixed_width"]

_INDEX_TYPES = (dtypes.int32, dtypes.int64)


def _infer_bound(op_type: str):
    def infer(inputs, attrs):
        sorted_inputs, values = (t.shape for t in inputs)
        for shape in (sorted_inputs, values):
            if shape.ndims is not None and shape.ndims != 2:
                raise ValueError(f"Shape must be rank 2 but is rank {shape.ndims} for "
                                 f"'{op_type}' with input shapes: {sorted_inputs}, {values}.")
        # As TF's: the rows are checked when the op runs, the shape is the values'.
        return [(attrs["out_type"], values.with_rank(2))]
    return infer


def _bound_kernel(side: str):
    def kernel(sorted_inputs, values, *, out_type, **_):
        sorted_inputs, values = np.asarray(sorted_inputs), np.asarray(values)
        if sorted_inputs.shape[0] != values.shape[0]:
            raise errors.InvalidArgumentError(
                None, None, "Leading dim_size of both tensors must match.")
        result = np.empty(values.shape, dtype=out_type.as_numpy_dtype)
        for row, (sequence, wanted) in enumerate(zip(sorted_inputs, values, strict=True)):
            result[row] = np.searchsorted(sequence, wanted, side=side)
        return result
    return kernel


define_op("LowerBound", infer=_infer_bound("LowerBound"), kernel=_bound_kernel("left"))
define_op("UpperBound", infer=_infer_bound("UpperBound"), kernel=_bound_kernel("right"))
NotDifferentiable("LowerBound")
NotDifferentiable("UpperBound")


def _last_dim(t):
    """``t``'s last dimension: an int when static, else a scalar tensor."""
    last = t.shape[-1].value if t.shape.ndims else None
    return last if last is not None else shape_of(t)[-1]


def searchsorted(sorted_sequence, values, side: str = "left", out_type=dtypes.int32,
                 name: Optional[str] = None):
    """For each value, the index in the innermost dimension of ``sorted_sequence`` where
    it would be inserted to keep it sorted: before equal entries (``side="left"``) or
    after them (``"right"``). The leading dimensions of both must agree."""
    if side not in ("left", "right"):
        raise ValueError("Argument `side` must be either 'right' or 'left'. Received: "
                         f"`side` = '{side}'.")
    out_type = dtypes.as_dtype(out_type)
    if out_type not in _INDEX_TYPES:
        raise TypeError(f"Value passed to parameter 'out_type' has DataType "
                        f"{out_type.name} not in list of allowed values: int32, int64")
    op_type = "LowerBound" if side == "left" else "UpperBound"
    graph = graph_for([t for t in (sorted_sequence, values) if hasattr(t, "graph")])
    # TF's ops are made where the call is, in a scope only when ``name`` is given.
    scope = graph.name_scope(name) if name else contextlib.nullcontext()
    with graph.as_default(), graph.atomic(), scope:
        sorted_sequence = convert_to_tensor(sorted_sequence)
        values = convert_to_tensor(values)
        if values.dtype is not sorted_sequence.dtype:
            raise TypeError(f"Input 'values' of '{op_type}' Op has type {values.dtype.name} "
                            f"that does not match type {sorted_sequence.dtype.name} of "
                            "argument 'sorted_inputs'.")
        if sorted_sequence.dtype not in REAL_NUMERIC:
            raise TypeError(f"Value passed to parameter 'sorted_inputs' has DataType "
                            f"{sorted_sequence.dtype.name} not in list of allowed values: "
                            + ", ".join(d.name for d in REAL_NUMERIC))
        sequence_2d = reshape(sorted_sequence, [-1, _last_dim(sorted_sequence)])
        values_2d = reshape(values, [-1, _last_dim(values)])
        found = graph.create_op(op_type, [sequence_2d, values_2d],
                                {"T": values.dtype, "out_type": out_type},
                                name=op_type).outputs[0]
        values_shape = values.shape.as_list() if values.shape.is_fully_defined() \
            else shape_of(values)
        result = reshape(found, values_shape)
        result.set_shape(values.shape)
        return result


def _infer_histogram(inputs, attrs):
    values, value_range, nbins = inputs
    if value_range.shape.ndims is not None and value_range.shape.as_list() not in ([2], [None]):
        raise ValueError(f"Dimension must be 2 but is {value_range.shape.as_list()[0]} for "
                         f"'HistogramFixedWidth' with input shapes: {values.shape}, "
                         f"{value_range.shape}, {nbins.shape}.")
    if nbins.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {nbins.shape.ndims} for "
                         f"'HistogramFixedWidth' with input shapes: {values.shape}, "
                         f"{value_range.shape}, {nbins.shape}.")
    count = static_ints(nbins)
    if count and count[0] <= 0:
        raise ValueError(f"Requires nbins > 0: {count[0]} for 'HistogramFixedWidth' with "
                         f"input shapes: {values.shape}, {value_range.shape}, {nbins.shape}.")
    return [(attrs["dtype"], TensorShape([count[0] if count else None]))]


def _histogram_kernel(values, value_range, nbins, *, dtype, **_):
    values = np.asarray(values).reshape(-1)
    low, high = np.asarray(value_range).reshape(-1)
    nbins = int(nbins)
    if nbins <= 0:
        raise errors.InvalidArgumentError(
            None, None, f"nbins should be a positive number, but got '{nbins}'")
    if not low < high:
        raise errors.InvalidArgumentError(
            None, None, f"value_range should satisfy value_range[0] < value_range[1], "
                        f"but got '[{low:g}, {high:g}]'")
    # TF's arithmetic: the offset in the values' type, the step and division in double.
    step = float(high - low) / nbins
    offsets = (np.maximum(values, low) - low).astype(np.float64)
    bins = np.minimum(offsets / step, nbins - 1).astype(np.int64)
    return np.bincount(bins, minlength=nbins).astype(dtype.as_numpy_dtype)


define_op("HistogramFixedWidth", infer=_infer_histogram, kernel=_histogram_kernel)
NotDifferentiable("HistogramFixedWidth")


def histogram_fixed_width(values, value_range, nbins=100, dtype=dtypes.int32,
                          name: Optional[str] = None):
    """Counts of ``values`` in ``nbins`` equal-width bins spanning ``value_range``
    ``[low, high]``; values below ``low`` count in the first bin, values at or above
    ``high`` in the last."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _INDEX_TYPES:
        raise TypeError(f"Value passed to parameter 'dtype' has DataType {dtype.name} not in "
                        "list of allowed values: int32, int64")
    graph = graph_for([t for t in (values, value_range, nbins) if hasattr(t, "graph")])
    with graph.as_default(), graph.atomic(), \
            graph.name_scope(name or "histogram_fixed_width") as scope:
        values = convert_to_tensor(values, name="values")
        value_range = convert_to_tensor(value_range, dtype=values.dtype, name="value_range")
        nbins = convert_to_tensor(nbins, dtype=dtypes.int32, name="nbins")
        return graph.create_op("HistogramFixedWidth", [values, value_range, nbins],
                               {"T": values.dtype, "dtype": dtype}, scope).outputs[0]
