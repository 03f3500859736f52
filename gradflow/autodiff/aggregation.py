"""Summing the gradient contributions that reach one tensor (SPEC G5, G6)."""
from __future__ import annotations

from typing import Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.framework.indexed_slices import IndexedSlices
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops import array, math
from gradflow.ops.functional import add_gradients

__all__ = ["AggregationMethod", "validate_aggregation_method", "aggregate"]


class AggregationMethod:
    """How contributions to one tensor are summed.

    ``ADD_N`` (the default) uses one AddN op, per device first; ``EXPERIMENTAL_TREE``
    sums pairwise so each term can be freed early; ``EXPERIMENTAL_ACCUMULATE_N`` uses
    one AccumulateN op when there are more than two terms of fully known shape.
    """

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


_VALID_METHODS = (AggregationMethod.ADD_N, AggregationMethod.EXPERIMENTAL_TREE,
                  AggregationMethod.EXPERIMENTAL_ACCUMULATE_N)


def validate_aggregation_method(method) -> int:
    if method is None:
        return AggregationMethod.DEFAULT
    if isinstance(method, bool) or method not in _VALID_METHODS:
        raise ValueError(f"Invalid aggregation_method specified {method}.")
    return method


def aggregate(contributions: list, op_name: str, method: int):
    """One Tensor, IndexedSlices or None from a list of contributions."""
    if not contributions:
        return None
    if len(contributions) == 1:
        return contributions[0]
    if all(isinstance(g, IndexedSlices) for g in contributions):
        return _concat_slices(contributions)
    if contributions[0].dtype is dtypes.variant:  # loop histories, TensorArrays
        return add_gradients(contributions)
    dense = [convert_to_tensor(g) if isinstance(g, IndexedSlices) else g for g in contributions]
    shape = _merged_shape(dense)
    if (method == AggregationMethod.EXPERIMENTAL_ACCUMULATE_N and len(dense) > 2
            and shape.is_fully_defined()):
        return math.accumulate_n(dense)
    if method in (AggregationMethod.EXPERIMENTAL_TREE, AggregationMethod.EXPERIMENTAL_ACCUMULATE_N):
        return _pairwise_sum(dense, op_name)
    return _add_n_per_device(dense)


def _merged_shape(tensors: list[Tensor]) -> TensorShape:
    shape = TensorShape(None)
    for t in tensors:
        shape = shape.merge_with(t.shape)
    return shape


def _pairwise_sum(tensors: list[Tensor], op_name: str) -> Tensor:
    with get_default_graph().name_scope(op_name + "_gradient_sum"):
        total = tensors[0]
        for t in tensors[1:]:
            total = math.add_n([total, t])
        return total


def _add_n_per_device(tensors: list[Tensor]) -> Tensor:
    """One AddN, or one per device (colocated with its terms) and then one across."""
    by_device: dict[str, list[Tensor]] = {}
    for t in tensors:
        by_device.setdefault(t.device or "", []).append(t)
    graph = get_default_graph()
    if len(by_device) == 1:  # with the first term, as TF1 (its consumer's group, if any)
        with graph.colocate_with(tensors[0].op, ignore_existing=True):
            return math.add_n(tensors)
    partial_sums = []
    for device in sorted(by_device):
        group = by_device[device]
        with graph.colocate_with(group[0].op, ignore_existing=True):
            partial_sums.append(math.add_n(group))
    return math.add_n(partial_sums)


def _flattened(slices: IndexedSlices) -> IndexedSlices:
    """IndexedSlices whose values are themselves IndexedSlices, made one level deep."""
    while isinstance(slices.values, IndexedSlices):
        inner = slices.values
        slices = IndexedSlices(inner.values, array.gather(slices.indices, inner.indices),
                               slices.dense_shape)
    return slices


def _concat_slices(contributions: list) -> IndexedSlices:
    parts = [_flattened(g) for g in contributions]
    dense_shape: Optional[Tensor] = next((p.dense_shape for p in parts
                                          if p.dense_shape is not None), None)
    values = array.concat([p.values for p in parts], 0)
    index_dtype = parts[0].indices.dtype
    indices = array.concat([p.indices if p.indices.dtype is index_dtype
                            else math.cast(p.indices, index_dtype) for p in parts], 0)
    return IndexedSlices(values, indices, dense_shape)
