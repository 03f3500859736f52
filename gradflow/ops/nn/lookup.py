"""Embedding lookup and top_k."""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import constant, convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.registry import RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops.common import (REAL_NUMERIC, apply_op, as_tensor, check_dtype_in, constructor,
                                 static_ints)
from gradflow.ops.nn.helpers import INDEX_TYPES, check_rank, scalar


# ------------------------------------------------------------------ embedding lookup
def _partition_of(ids: Tensor, tables: list[Tensor], strategy: str) -> tuple[Tensor, Tensor]:
    """For each id: the table holding its row, and the row's index in that table.

    'mod': row r lives in table r % n; 'div': tables hold contiguous ranges, the first
    (rows % n) tables one row more than the others.
    """
    count = constant(len(tables), dtype=ids.dtype)
    if strategy == "mod":
        return ids % count, ids // count
    total = math_ops.cast(math_ops.add_n([array.gather_dim(t, 0) for t in tables]), ids.dtype)
    per_table, extras = total // count, total % count
    larger = per_table + constant(1, dtype=ids.dtype)
    table = math_ops.maximum(ids // larger, (ids - extras) // per_table)
    row = math_ops.select_v2(table < extras, ids % larger, (ids - extras) % per_table)
    return table, row


def _partitioned_lookup(tables: list[Tensor], ids: Tensor, strategy: str) -> Tensor:
    """Gathers each id's row from its table; each table's gradient stays IndexedSlices."""
    table_of, row_of = _partition_of(ids, tables, strategy)
    row_rank = tables[0].shape.ndims
    if row_rank is None:
        raise ValueError(f"embedding_lookup over several tables needs params of known rank "
                         f"({tables[0].name})")
    mask_shape = array.concat([array.shape(ids), constant([1] * (row_rank - 1))], 0)
    no_row = array.zeros_like(row_of)
    pieces = []
    for index, table in enumerate(tables):
        mine = math_ops.equal(table_of, constant(index, dtype=ids.dtype))
        rows = array.gather(table, math_ops.select_v2(mine, row_of, no_row))
        pieces.append(math_ops.select_v2(array.reshape(mine, mask_shape), rows,
                                         array.zeros_like(rows)))
    return math_ops.add_n(pieces)


def _clip_rows(rows: Tensor, max_norm: float, ids_rank: Optional[int]) -> Tensor:
    """Rescales each embedding row whose L2 norm exceeds ``max_norm`` down to it."""
    if ids_rank is None or rows.shape.ndims is None:
        raise ValueError("embedding_lookup with max_norm needs ids and params of known rank")
    axes = list(range(ids_rank, rows.shape.ndims))
    square_sum = math_ops.reduce_sum(math_ops.square(rows), axes, keepdims=True)
    limit = scalar(max_norm, rows)
    return rows * limit * math_ops.rsqrt(math_ops.maximum(square_sum, limit * limit))


@constructor("embedding_lookup", "params", "ids", "partition_strategy", "validate_indices",
             "max_norm", single_op=False)
def embedding_lookup(params, ids, partition_strategy: str = "mod",
                     name: Optional[str] = None, validate_indices: bool = True,
                     max_norm: Optional[float] = None) -> Tensor:
    """Rows of ``params`` (one table, or a list of tables sharded by
    ``partition_strategy``) at ``ids``; the gradient is IndexedSlices per table."""
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}.Must be one "
                         "of either `mod` or `div`.")
    tables = list(params) if isinstance(params, (list, tuple)) else [params]
    if not tables:
        raise ValueError("Length of params is currently 0. Need at least one param.")
    with name_scope(name, "embedding_lookup", tables + [ids]) as scope:
        tables = [convert_to_tensor(t, name="params") for t in tables]
        ids_t = as_tensor(ids, name="ids", like=tables[0])
        check_dtype_in(ids_t, INDEX_TYPES, "embedding_lookup", "ids")
        if len(tables) > 1:
            result = _partitioned_lookup(tables, ids_t, partition_strategy)
            return result if max_norm is None else \
                _clip_rows(result, max_norm, ids_t.shape.ndims)
        # one table: TF names the gather after the scope and ends in an Identity
        result = array.gather(tables[0], ids_t, name=scope)
        if max_norm is not None:
            result = _clip_rows(result, max_norm, ids_t.shape.ndims)
        return array.identity(result)


# ---------------------------------------------------------------------------- top_k
class TopKV2(NamedTuple):
    values: Tensor
    indices: Tensor


def _infer_top_k(inputs, attrs):
    x, k = inputs
    check_dtype_in(x, REAL_NUMERIC, "TopKV2", "input")
    check_dtype_in(k, INDEX_TYPES, "TopKV2", "k")
    check_rank(x, 1, "TopKV2", "input", at_least=True)
    known_k = static_ints(k)
    k_value = None if known_k is None else known_k[0]
    dims = x.shape.as_tuple()
    if k_value is not None and k_value < 0:
        raise ValueError(f"Need k >= 0, got {k_value} (top_k of {x.name})")
    if k_value is not None and dims is not None and dims[-1] is not None and dims[-1] < k_value:
        raise ValueError(f"input must have last dimension >= k = {k_value} but is {dims[-1]} "
                         f"(top_k of {x.name} with shape {x.shape})")
    shape = TensorShape(None) if dims is None else TensorShape(dims[:-1] + (k_value,))
    return [(x.dtype, shape), (attrs["index_type"], shape)]


def _top_k_kernel(x, k, **attrs):
    k, columns = int(k), x.shape[-1]
    if not 0 <= k <= columns:
        raise errors.InvalidArgumentError(
            None, None, f"input must have at least k columns. Had {columns}, needed {k}")
    # A stable ascending sort of the reversed rows, read backwards, sorts descending
    # with ties going to the lower index, as TensorFlow does.
    ascending = np.argsort(x[..., ::-1], axis=-1, kind="stable")
    indices = columns - 1 - ascending[..., ::-1][..., :k]
    return (np.take_along_axis(x, indices, axis=-1),
            indices.astype(attrs["index_type"].as_numpy_dtype))


define_op("TopKV2", infer=_infer_top_k, kernel=_top_k_kernel)


@RegisterGradient("TopKV2")
def _top_k_grad(op, grad_values, grad_indices):
    """Scatters the values' gradient back to the positions they were taken from."""
    x, indices = op.inputs[0], op.outputs[1]
    index_type = indices.dtype
    x_shape = array.shape_of_input(x)
    size = array.size(x, out_type=index_type)
    row_starts = math_ops.range(0, size, math_ops.cast(x_shape[-1], index_type))
    per_row = array.reshape(indices, [-1, array.shape(indices)[-1]])
    flat = array.reshape(per_row + array.expand_dims(row_starts, -1), [-1])
    dense = array.unsorted_segment_sum(array.reshape(grad_values, [-1]), flat, size)
    return array.reshape(dense, x_shape), None


@constructor("TopKV2", "input", "k", "sorted", "index_type", single_op=False)
def top_k(input, k=1, sorted: bool = True, index_type=dtypes.int32,  # noqa: A002 - TF's names
          name: Optional[str] = None) -> TopKV2:
    """The ``k`` largest entries of each last-axis row, descending, and their indices."""
    x = convert_to_tensor(input, name="input")
    k_t = as_tensor(k, dtype=None if isinstance(k, Tensor) else dtypes.int32, name="k", like=x)
    values, indices = apply_op("TopKV2", [x, k_t], name=name or "TopKV2", sorted=bool(sorted),
                               index_type=dtypes.as_dtype(index_type))
    return TopKV2(values, indices)
