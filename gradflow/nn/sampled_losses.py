"""Sampled losses for large output vocabularies: ``nce_loss`` and ``sampled_softmax_loss``.

Both score the true classes and a sample of ``num_sampled`` classes (by default drawn
log-uniformly, unique, per batch) with ``inputs @ weights[class] + biases[class]``,
subtract ``log Q`` (the sampler's expected count) so the estimate is unbiased, and
optionally push sampled classes that equal a true class ("accidental hits") to -FLT_MAX.
NCE then applies a sigmoid cross entropy per logit, sampled softmax a softmax cross
entropy over the row. Weights may be sharded like ``embedding_lookup``'s params.
"""
from __future__ import annotations

from typing import Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, name_scope
from gradflow.nn.embedding import embedding_lookup
from gradflow.ops import array
from gradflow.ops import math as math_ops
from gradflow.ops import nn as nn_ops
from gradflow.ops.candidate_sampling import compute_accidental_hits, log_uniform_candidate_sampler
from gradflow.ops.common import graph_for
from gradflow.ops.sparse_ops import sparse_to_dense

__all__ = ["nce_loss", "sampled_softmax_loss", "sampled_logits"]


def _check_counts(num_sampled, num_classes, num_true) -> None:
    for value, arg in ((num_sampled, "num_sampled"), (num_classes, "num_classes"),
                       (num_true, "num_true")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{arg} must be a positive int, got {value!r}")


def _row_sums(x: Tensor) -> Tensor:
    """Sums each row of a matrix into a vector (named "Reshape", as in TF)."""
    return array.reshape(math_ops.reduce_sum(x, axis=1, keepdims=True), [-1])


def sampled_logits(weights, biases, labels, inputs, num_sampled: int, num_classes: int,
                   num_true: int = 1, sampled_values=None, subtract_log_q: bool = True,
                   remove_accidental_hits: bool = False, partition_strategy: str = "mod",
                   name: Optional[str] = None, seed: Optional[int] = None):
    """The logits ``[batch, num_true + num_sampled]`` of the true then the sampled classes
    and their target probabilities (``1/num_true`` for each true class, 0 for samples)."""
    _check_counts(num_sampled, num_classes, num_true)
    tables = list(weights) if isinstance(weights, (list, tuple)) else [weights]
    if not tables:
        raise ValueError("weights must be a tensor or a non-empty list of shards")
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}.Must be one "
                         "of either `mod` or `div`.")
    if sampled_values is not None and len(sampled_values) != 3:
        raise ValueError("sampled_values must be a (sampled_candidates, true_expected_count, "
                         "sampled_expected_count) triple")
    graph = graph_for(tables + [biases, inputs, labels])
    with graph.as_default(), \
            name_scope(name, "compute_sampled_logits", tables + [biases, inputs, labels]):
        labels_t = convert_to_tensor(labels, name="labels")
        if labels_t.dtype is not dtypes.int64:
            labels_t = math_ops.cast(labels_t, dtypes.int64)
        labels_flat = array.reshape(labels_t, [-1])
        if sampled_values is None:
            sampled_values = log_uniform_candidate_sampler(
                true_classes=labels_t, num_true=num_true, num_sampled=num_sampled, unique=True,
                range_max=num_classes, seed=seed)
        sampled, true_expected, sampled_expected = (array.stop_gradient(convert_to_tensor(s))
                                                    for s in sampled_values)
        sampled = math_ops.cast(sampled, dtypes.int64)
        all_ids = array.concat([labels_flat, sampled], 0)
        inputs_t = convert_to_tensor(inputs, name="inputs")
        all_w = embedding_lookup(tables, all_ids, partition_strategy=partition_strategy)
        if all_w.dtype is not inputs_t.dtype:
            all_w = math_ops.cast(all_w, inputs_t.dtype)
        num_labels = array.shape(labels_flat)[:1]
        true_w, sampled_w = _split_rows(all_w, num_labels)
        sampled_logits_t = math_ops.matmul(inputs_t, sampled_w, transpose_b=True)
        all_b = embedding_lookup(biases, all_ids, partition_strategy=partition_strategy)
        if all_b.dtype is not inputs_t.dtype:
            all_b = math_ops.cast(all_b, inputs_t.dtype)
        true_b, sampled_b = _split_rows(all_b, num_labels)
        # Each input row dotted with its num_true true-class rows.
        dim = array.shape(true_w)[1:2]
        true_w = array.reshape(true_w, array.concat([[-1, num_true], dim], 0))
        row_dots = array.expand_dims(inputs_t, 1) * true_w
        true_logits = array.reshape(_row_sums(array.reshape(row_dots, array.concat([[-1], dim],
                                                                                     0))),
                                    [-1, num_true])
        true_logits += array.reshape(true_b, [-1, num_true])
        sampled_logits_t += sampled_b
        if remove_accidental_hits:
            sampled_logits_t += _accidental_hit_mask(labels_t, sampled, num_true, num_sampled,
                                                     sampled_logits_t.dtype)
        if subtract_log_q:
            true_logits -= math_ops.log(math_ops.cast(true_expected, true_logits.dtype))
            sampled_logits_t -= math_ops.log(math_ops.cast(sampled_expected,
                                                           sampled_logits_t.dtype))
        out_logits = array.concat([true_logits, sampled_logits_t], 1)
        out_labels = array.concat([array.ones_like(true_logits) / num_true,
                                   array.zeros_like(sampled_logits_t)], 1)
        return out_logits, out_labels


def _split_rows(rows: Tensor, count: Tensor) -> tuple[Tensor, Tensor]:
    """The first ``count`` rows (``count`` a 1-element vector) and the rest."""
    rank = rows.shape.ndims or 1
    if rank == 1:
        return array.slice(rows, [0], count), array.slice(rows, count, [-1])
    rest = [0] * (rank - 1)
    head = array.slice(rows, [0] * rank, array.concat([count, [-1] * (rank - 1)], 0))
    tail = array.slice(rows, array.concat([count, rest], 0), [-1] * rank)
    return head, tail


def _accidental_hit_mask(labels: Tensor, sampled: Tensor, num_true: int, num_sampled: int,
                         dtype) -> Tensor:
    """-FLT_MAX where a row's sampled class is one of its true classes, else 0."""
    indices, ids, weights = compute_accidental_hits(labels, sampled, num_true=num_true)
    positions = array.concat([array.reshape(indices, [-1, 1]),
                              array.reshape(math_ops.cast(ids, dtypes.int32), [-1, 1])], 1,
                             name="sparse_indices")
    shape = array.concat([array.shape(labels)[:1], array.expand_dims(num_sampled, 0)], 0)
    if weights.dtype is not dtype:
        weights = math_ops.cast(weights, dtype)
    return sparse_to_dense(positions, shape, weights, default_value=0.0, validate_indices=False)


def nce_loss(weights, biases, labels, inputs, num_sampled: int, num_classes: int,
             num_true: int = 1, sampled_values=None, remove_accidental_hits: bool = False,
             partition_strategy: str = "mod", name: str = "nce_loss") -> Tensor:
    """Noise-contrastive estimation loss per example ``[batch]``: logistic regression of
    true classes against ``num_sampled`` sampled ones (``weights`` ``[num_classes, dim]``,
    ``labels`` ``[batch, num_true]``, ``inputs`` ``[batch, dim]``)."""
    graph = graph_for([biases, inputs, labels])
    with graph.as_default(), graph.atomic():
        logits, targets = sampled_logits(
            weights, biases, labels, inputs, num_sampled, num_classes, num_true=num_true,
            sampled_values=sampled_values, subtract_log_q=True,
            remove_accidental_hits=remove_accidental_hits,
            partition_strategy=partition_strategy, name=name)
        losses = nn_ops.sigmoid_cross_entropy_with_logits(labels=targets, logits=logits,
                                                          name="sampled_losses")
        return _row_sums(losses)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled: int, num_classes: int,
                         num_true: int = 1, sampled_values=None,
                         remove_accidental_hits: bool = True, partition_strategy: str = "mod",
                         name: str = "sampled_softmax_loss",
                         seed: Optional[int] = None) -> Tensor:
    """Sampled softmax cross entropy per example ``[batch]``: the softmax over the true
    classes and ``num_sampled`` sampled ones (a training-time stand-in for the full
    softmax)."""
    graph = graph_for([biases, inputs, labels])
    with graph.as_default(), graph.atomic():
        logits, targets = sampled_logits(
            weights, biases, labels, inputs, num_sampled, num_classes, num_true=num_true,
            sampled_values=sampled_values, subtract_log_q=True,
            remove_accidental_hits=remove_accidental_hits,
            partition_strategy=partition_strategy, name=name, seed=seed)
        targets = array.stop_gradient(targets, name="labels_stop_gradient")
        return nn_ops.softmax_cross_entropy_with_logits_v2(labels=targets, logits=logits)
