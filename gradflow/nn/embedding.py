"""``gf.nn.embedding_lookup`` and ``embedding_lookup_sparse``: rows of (possibly sharded)
embedding tables, and their per-row weighted sums, means or sqrt-n means for sparse ids.

Built from the engine's public ops: the gather-based lookup (one table, or a list sharded
by ``partition_strategy``, each table's gradient staying IndexedSlices), ``unique`` and
the segment reductions.
"""
from __future__ import annotations

from typing import Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import constant_value, convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.framework.sparse_tensor import SparseTensor
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops import nn as nn_ops
from gradflow.ops import segments
from gradflow.ops.common import graph_for
from gradflow.ops.sparse_more import sparse_reshape
from gradflow.ops.sparse_rows import sparse_fill_empty_rows, sparse_retain

__all__ = ["embedding_lookup", "embedding_lookup_sparse", "safe_embedding_lookup_sparse"]

_COMBINERS = ("mean", "sqrtn", "sum")


def _tables(params) -> list:
    """``params`` as a list of tables."""
    tables = list(params) if isinstance(params, (list, tuple)) else [params]
    if not tables:
        raise ValueError("Length of params is currently 0. Need at least one param.")
    return tables


def embedding_lookup(params, ids, partition_strategy: str = "mod", name: Optional[str] = None,
                     validate_indices: bool = True, max_norm: Optional[float] = None) -> Tensor:
    """Rows of ``params`` at ``ids``. ``params`` is one table or a list of shards of one
    (row ``r`` in shard ``r % n`` under "mod", contiguous ranges under "div", the first
    shards one row longer when the rows do not divide evenly); rows whose L2 norm
    exceeds ``max_norm`` are scaled down to it."""
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}.Must be one "
                         "of either `mod` or `div`.")
    if max_norm is not None and not max_norm > 0:
        raise ValueError(f"max_norm must be positive, got {max_norm!r}")
    tables = _tables(params)
    graph = graph_for(tables + [ids])
    with graph.as_default(), graph.atomic():
        shards = tables if len(tables) > 1 else tables[0]
        return nn_ops.embedding_lookup(shards, ids, partition_strategy=partition_strategy,
                                       name=name, validate_indices=validate_indices,
                                       max_norm=max_norm)


def _weights_like(weights: Tensor, embeddings: Tensor) -> Tensor:
    """``weights`` ([n]) reshaped to ``[n, 1, ...]`` to broadcast over embedding rows."""
    rank = embeddings.shape.ndims
    if rank is not None:
        return array.reshape(weights, [-1] + [1] * (rank - 1))
    ones = array.ones(array.expand_dims(array.rank(embeddings) - 1, 0), dtype=dtypes.int32)
    return array.reshape(weights, array.concat([array.shape(weights), ones], 0))


def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy: str = "mod",
                            name: Optional[str] = None, combiner: Optional[str] = None,
                            max_norm: Optional[float] = None,
                            allow_fast_lookup: bool = False) -> Tensor:
    """One combined embedding per row of ``sp_ids`` (a ``[batch, k]`` SparseTensor of
    ids): the ``combiner`` ("sum", "mean" (default), "sqrtn") of the rows of ``params`` at
    that row's ids, each scaled by its entry of ``sp_weights`` (None: weights of one).
    Rows without ids are absent past the last row that has some, and zero before it."""
    combiner = "mean" if combiner is None else combiner
    if combiner not in _COMBINERS:
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"sp_ids must be SparseTensor, got {type(sp_ids)}")
    if sp_weights is not None and not isinstance(sp_weights, SparseTensor):
        raise TypeError(f"sp_weights must be either None or SparseTensor, got "
                        f"{type(sp_weights)}")
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}.Must be one "
                         "of either `mod` or `div`.")
    tables = _tables(params)
    graph = graph_for(tables + [sp_ids.values])
    with graph.as_default(), graph.atomic(), \
            name_scope(name, "embedding_lookup_sparse", tables + [sp_ids.values]) as scope:
        segment_ids = sp_ids.indices[:, 0]
        ids, idx = array.unique(sp_ids.values)
        embeddings = embedding_lookup(tables, ids, partition_strategy=partition_strategy,
                                      max_norm=max_norm)
        if sp_weights is None:
            reduce = {"sum": segments.sparse_segment_sum, "mean": segments.sparse_segment_mean,
                      "sqrtn": segments.sparse_segment_sqrt_n}[combiner]
            return reduce(embeddings, idx, segment_ids, name=scope)
        weights = convert_to_tensor(sp_weights.values)
        if weights.dtype is not embeddings.dtype:
            raise TypeError(f"sp_weights has dtype {weights.dtype.name} but params have "
                            f"{embeddings.dtype.name}; they must match")
        embeddings = array.gather(embeddings, idx)
        weights = _weights_like(weights, embeddings)
        weighted = embeddings * weights
        if combiner == "sum":
            return segments.segment_sum(weighted, segment_ids, name=scope)
        summed = segments.segment_sum(weighted, segment_ids)
        if combiner == "mean":
            return math_ops.div_no_nan(summed, segments.segment_sum(weights, segment_ids),
                                       name=scope)
        norms = math_ops.sqrt(segments.segment_sum(math_ops.pow(weights, 2), segment_ids))
        return math_ops.div_no_nan(summed, norms, name=scope)



def _prune(sp_ids: SparseTensor, sp_weights: Optional[SparseTensor], keep: Tensor) -> tuple:
    """The entries of ids (and weights) where ``keep`` holds."""
    ids = sparse_retain(sp_ids, keep)
    return ids, None if sp_weights is None else sparse_retain(sp_weights, keep)


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None,
                                 combiner: str = "mean", default_id: Optional[int] = None,
                                 name: Optional[str] = None, partition_strategy: str = "div",
                                 max_norm: Optional[float] = None) -> Tensor:
    """``embedding_lookup_sparse`` that tolerates bad input, as TF1's: ids of any rank
    (the last dimension is combined), negative ids and (unless summing) non-positive
    weights dropped, and empty rows given ``default_id``'s embedding (zeros when None)."""
    if embedding_weights is None:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    tables = _tables(embedding_weights)
    tables = [t if hasattr(t, "initializer") else convert_to_tensor(t) for t in tables]
    if not isinstance(sparse_ids, SparseTensor):
        raise TypeError(f"sparse_ids must be SparseTensor, got {type(sparse_ids)}")
    graph = graph_for(tables + [sparse_ids.values])
    with graph.as_default(), graph.atomic(), name_scope(
            name, "embedding_lookup", tables + [sparse_ids.values]) as scope:
        original_shape = sparse_ids.dense_shape
        rank = sparse_ids.shape.ndims
        if rank is None:
            raise ValueError("safe_embedding_lookup_sparse needs sparse_ids of known rank")
        rows = math_ops.reduce_prod(original_shape[:rank - 1])
        flat_ids = sparse_reshape(sparse_ids, array.stack([rows, original_shape[rank - 1]]))
        weights = None if sparse_weights is None else SparseTensor(
            flat_ids.indices, sparse_weights.values, flat_ids.dense_shape)
        flat_ids, weights = _prune(flat_ids, weights,
                                   math_ops.greater_equal(flat_ids.values, 0))
        if combiner != "sum" and weights is not None:
            flat_ids, weights = _prune(flat_ids, weights,
                                       math_ops.greater(weights.values, 0))
        flat_ids, empty = sparse_fill_empty_rows(flat_ids, default_id or 0)
        if weights is not None:
            weights, _ = sparse_fill_empty_rows(weights, 1.0)
        result = embedding_lookup_sparse(tables, flat_ids, weights, combiner=combiner,
                                         partition_strategy=partition_strategy,
                                         name=None if default_id is None else scope,
                                         max_norm=max_norm)
        if default_id is None:
            empty = array.tile(array.reshape(empty, [-1, 1]),
                               array.stack([1, array.shape(result)[1]]))
            result = math_ops.where(empty, array.zeros_like(result), result, name=scope)
        outer = math_ops.cast(original_shape[:rank - 1], dtypes.int32)
        final = array.reshape(result, array.concat([outer, array.shape(result)[1:]], 0))
        known = constant_value(original_shape)
        outer_dims = [None] * (rank - 1) if known is None else [int(d) for d in known[:-1]]
        if result.shape.ndims is not None:
            final.set_shape(outer_dims + result.shape.as_list()[1:])
        return final
