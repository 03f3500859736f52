"""Detection-model box ops: ``combined_non_max_suppression`` (per class, then across
classes, batched) and ``non_max_suppression_overlaps`` (on a given overlap matrix),
under TF's op types ``CombinedNonMaxSuppression`` and ``NonMaxSuppressionWithOverlaps``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, op_scope
from gradflow.framework.registry import define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.common import apply_op, static_ints
from gradflow.ops.image_ops import box_iou, greedy_suppression
from gradflow.ops.image_resize import no_gradient_in_tf

__all__ = ["combined_non_max_suppression", "non_max_suppression_overlaps"]


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _combined_kernel(boxes, scores, max_per_class, max_total, iou_threshold,
                     score_threshold, *, pad_per_class, clip_boxes):
    if boxes.ndim != 4 or boxes.shape[3] != 4 or scores.ndim != 3 \
            or boxes.shape[:2] != scores.shape[:2]:
        raise _invalid(f"boxes must be [batch, num_boxes, q, 4] and scores [batch, num_boxes, "
                       f"num_classes], got {list(boxes.shape)} and {list(scores.shape)}")
    classes = scores.shape[2]
    if boxes.shape[2] not in (1, classes):
        raise _invalid(f"third dimension of boxes must be either 1 or {classes}")
    per_class, total = int(max_per_class), int(max_total)
    if per_class <= 0 or total <= 0:
        raise _invalid("max_size_per_class and max_total_size must be positive")
    limit = min(per_class * classes, total) if pad_per_class else total
    batch = boxes.shape[0]
    out_boxes = np.zeros((batch, limit, 4), np.float32)
    out_scores = np.zeros((batch, limit), np.float32)
    out_classes = np.zeros((batch, limit), np.float32)
    valid = np.zeros(batch, np.int32)
    threshold = np.float32(iou_threshold)
    for b in range(batch):
        found = []  # (score, class, box)
        for c in range(classes):
            candidates = boxes[b, :, 0 if boxes.shape[2] == 1 else c].astype(np.float32)
            kept = greedy_suppression(scores[b, :, c], per_class, threshold, score_threshold,
                                      lambda i, k, cand=candidates: box_iou(cand[i], cand[k]))
            found.extend((scores[b, i, c], c, candidates[i]) for i in kept)
        found.sort(key=lambda item: -float(item[0]))
        found = found[:limit]
        valid[b] = len(found)
        for slot, (score, c, box) in enumerate(found):
            out_scores[b, slot], out_classes[b, slot] = score, c
            out_boxes[b, slot] = np.clip(box, 0.0, 1.0) if clip_boxes else box
    return out_boxes, out_scores, out_classes, valid


def _infer_combined(inputs, attrs):
    boxes, scores, per_class, total = inputs[:4]
    if boxes.shape.ndims not in (None, 4):
        raise ValueError(f"Shape must be rank 4 but is rank {boxes.shape.ndims} for 'boxes' of "
                         f"'CombinedNonMaxSuppression' (input shape {boxes.shape})")
    if scores.shape.ndims not in (None, 3):
        raise ValueError(f"Shape must be rank 3 but is rank {scores.shape.ndims} for 'scores' "
                         f"of 'CombinedNonMaxSuppression' (input shape {scores.shape})")
    batch = boxes.shape.as_tuple()[0] if boxes.shape.ndims else None
    classes = scores.shape.as_tuple()[2] if scores.shape.ndims else None
    total_v, per_v = (static_ints(total) or [None])[0], (static_ints(per_class) or [None])[0]
    limit = total_v
    if attrs["pad_per_class"]:
        limit = None if None in (total_v, per_v, classes) else min(per_v * classes, total_v)
    return [(dtypes.float32, TensorShape([batch, limit, 4])),
            (dtypes.float32, TensorShape([batch, limit])),
            (dtypes.float32, TensorShape([batch, limit])),
            (dtypes.int32, TensorShape([batch]))]


define_op("CombinedNonMaxSuppression", infer=_infer_combined, kernel=_combined_kernel)
no_gradient_in_tf("CombinedNonMaxSuppression")


def combined_non_max_suppression(boxes, scores, max_output_size_per_class, max_total_size,
                                 iou_threshold: float = 0.5,
                                 score_threshold: float = float("-inf"),
                                 pad_per_class: bool = False, clip_boxes: bool = True,
                                 name: Optional[str] = None) -> tuple:
    """Greedy NMS per class of every batch entry, then the best ``max_total_size``
    detections across classes: (boxes, scores, classes, valid_detections), zero-padded."""
    with op_scope(name, "combined_non_max_suppression", [boxes, scores]):
        iou = convert_to_tensor(iou_threshold, dtype=dtypes.float32, name="iou_threshold")
        low = convert_to_tensor(score_threshold, dtype=dtypes.float32, name="score_threshold")
        with op_scope(None, "CombinedNonMaxSuppression", [boxes, scores]) as inner:
            boxes = convert_to_tensor(boxes, dtype=dtypes.float32, name="boxes")
            scores = convert_to_tensor(scores, dtype=dtypes.float32, name="scores")
            per_class = convert_to_tensor(max_output_size_per_class, dtype=dtypes.int32,
                                          name="max_output_size_per_class")
            total = convert_to_tensor(max_total_size, dtype=dtypes.int32, name="max_total_size")
            return tuple(apply_op("CombinedNonMaxSuppression",
                                  [boxes, scores, per_class, total, iou, low], name=inner,
                                  pad_per_class=bool(pad_per_class),
                                  clip_boxes=bool(clip_boxes)))


def _overlaps_kernel(overlaps, scores, max_output_size, overlap_threshold, score_threshold):
    if overlaps.ndim != 2 or overlaps.shape[0] != overlaps.shape[1] \
            or scores.shape != (overlaps.shape[0],):
        raise _invalid(f"overlaps must be square [num_boxes, num_boxes] and scores "
                       f"[num_boxes], got {list(overlaps.shape)} and {list(scores.shape)}")
    return greedy_suppression(scores, int(max_output_size), overlap_threshold, score_threshold,
                              lambda i, kept: overlaps[i, kept])


def _infer_overlaps(inputs, attrs):
    overlaps, scores = inputs[:2]
    for t, rank, what in ((overlaps, 2, "overlaps"), (scores, 1, "scores")):
        if t.shape.ndims not in (None, rank):
            raise ValueError(f"Shape must be rank {rank} but is rank {t.shape.ndims} for "
                             f"'{what}' of 'NonMaxSuppressionWithOverlaps' (input shape "
                             f"{t.shape})")
    return [(dtypes.int32, TensorShape([None]))]


define_op("NonMaxSuppressionWithOverlaps", kernel=_overlaps_kernel, infer=_infer_overlaps)
no_gradient_in_tf("NonMaxSuppressionWithOverlaps")


def non_max_suppression_overlaps(overlaps, scores, max_output_size,
                                 overlap_threshold: float = 0.5,
                                 score_threshold: float = float("-inf"),
                                 name: Optional[str] = None) -> Tensor:
    """Greedy NMS on a given [n, n] overlap matrix: the kept indices, best score first."""
    with op_scope(name, "non_max_suppression_overlaps", [overlaps, scores]):
        threshold = convert_to_tensor(overlap_threshold, dtype=dtypes.float32,
                                      name="overlap_threshold")
        low = convert_to_tensor(score_threshold, dtype=dtypes.float32, name="score_threshold")
        with op_scope(None, "NonMaxSuppressionWithOverlaps", [overlaps, scores]) as inner:
            overlaps = convert_to_tensor(overlaps, dtype=dtypes.float32, name="overlaps")
            scores = convert_to_tensor(scores, dtype=dtypes.float32, name="scores")
            size = convert_to_tensor(max_output_size, dtype=dtypes.int32,
                                     name="max_output_size")
            return apply_op("NonMaxSuppressionWithOverlaps",
                            [overlaps, scores, size, threshold, low], name=inner)
