"""Image ops beyond resizing and colour: flips and rotations, random crops and flips,
patches, box ops (non-max suppression, drawing, sampling distorted boxes), image
metrics (total variation, gradients, Sobel edges, PSNR, SSIM) and glimpses.

``ExtractImagePatches``, the ``NonMaxSuppression*`` ops, ``DrawBoundingBoxes``,
``SampleDistortedBoundingBoxV2`` and ``ExtractGlimpse`` are primitives under TF's type
names; the rest is composed from public ops, as TF composes it.
"""
from __future__ import annotations

import itertools
from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, control_dependencies, op_scope
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.array import (concat, identity, pad, reverse, slice as slice_op, tile,
                                transpose, unsorted_segment_sum)
from gradflow.ops.common import REAL_NUMERIC, apply_op, check_dtype_in, static_ints
from gradflow.ops.functional import cond
from gradflow.ops.image_color import convert_image_dtype
from gradflow.ops.image_resize import atomic, check_image, image_dimensions, no_gradient_in_tf
from gradflow.ops.logging_ops import Assert
from gradflow.ops.math import (abs as abs_op, floormod, greater_equal, less, log, pow as pow_op,
                               reduce_all, reduce_mean, reduce_prod, reduce_sum,
                               round as round_op, squared_difference)
from gradflow.ops.nn import avg_pool, depthwise_conv2d, relu
from gradflow.ops.primitives import cast, reshape, shape as shape_op, stack, subtract, zeros
from gradflow.ops.random import get_seed, random_uniform

__all__ = ["flip_left_right", "flip_up_down", "random_flip_left_right",
           "random_flip_up_down", "rot90", "transpose_image", "random_crop",
           "extract_image_patches", "extract_patches", "non_max_suppression",
           "non_max_suppression_with_scores", "non_max_suppression_padded",
           "draw_bounding_boxes", "sample_distorted_bounding_box", "total_variation",
           "image_gradients", "sobel_edges", "psnr", "ssim", "ssim_multiscale",
           "extract_glimpse", "greedy_suppression", "box_iou"]

_streams = itertools.count()  # names each sampling op's generator in a session


# ------------------------------------------------------------------ flips and rotations
def _flip(image, axis_3d: int, default: str) -> Tensor:
    with op_scope(None, default, [image]):
        image = check_image(image)
        axis = axis_3d + (1 if image.shape.ndims == 4 else 0)
        return reverse(image, [axis])


def flip_left_right(image) -> Tensor:
    """Mirrors ``image`` (3-D or 4-D) along its width."""
    return _flip(image, 1, "flip_left_right")


def flip_up_down(image) -> Tensor:
    """Mirrors ``image`` (3-D or 4-D) along its height."""
    return _flip(image, 0, "flip_up_down")


def _random_flip(image, axis_3d: int, seed: Optional[int], default: str) -> Tensor:
    with op_scope(None, default, [image]):
        image = check_image(image)
        if image.shape.ndims == 3:
            draw = random_uniform([], 0, 1.0, seed=seed)
            flip = less(draw, 0.5)
            return cond(flip, lambda: reverse(image, [axis_3d]), lambda: image)
        batch = image_dimensions(image, (0,))[0]
        draw = random_uniform(stack([batch]) if isinstance(batch, Tensor) else [batch],
                              0, 1.0, seed=seed)
        flips = round_op(reshape(draw, stack([batch, 1, 1, 1]) if isinstance(batch, Tensor)
                                 else [batch, 1, 1, 1]))
        flips = cast(flips, image.dtype)
        flipped = reverse(image, [axis_3d + 1])
        return flips * flipped + (1 - flips) * image


def random_flip_left_right(image, seed: Optional[int] = None) -> Tensor:
    """Mirrors ``image`` along its width with probability 1/2 (each image of a batch
    independently)."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image, seed: Optional[int] = None) -> Tensor:
    """Mirrors ``image`` along its height with probability 1/2 (each image of a batch
    independently)."""
    return _random_flip(image, 0, seed, "random_flip_up_down")


def _rotated(image: Tensor, k: int) -> Tensor:
    """``image`` turned ``k`` quarter turns counter-clockwise (k static)."""
    batch = image.shape.ndims == 4
    rows, cols = (1, 2) if batch else (0, 1)
    perm = [0, 2, 1, 3] if batch else [1, 0, 2]
    k %= 4
    if k == 1:
        return transpose(reverse(image, [cols]), perm)
    if k == 2:
        return reverse(image, [rows, cols])
    if k == 3:
        return reverse(transpose(image, perm), [cols])
    return image


def rot90(image, k=1, name: Optional[str] = None) -> Tensor:
    """``image`` (3-D or 4-D) rotated ``k`` times by 90 degrees counter-clockwise; ``k``
    may be a scalar int32 tensor."""
    with op_scope(name, "rot90", [image, k]):
        image = check_image(image)
        if not isinstance(k, Tensor):
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
                raise TypeError(f"k must be an int or an int32 tensor, got {k!r}")
            return _rotated(image, int(k))
        turns = floormod(cast(k, dtypes.int32), 4, name="mod")
        return cond(turns < 2,
                    lambda: cond(turns < 1, lambda: image, lambda: _rotated(image, 1)),
                    lambda: cond(turns < 3, lambda: _rotated(image, 2),
                                 lambda: _rotated(image, 3)))


def transpose_image(image, name: Optional[str] = None) -> Tensor:
    """Swaps the height and width of ``image`` (3-D or 4-D)."""
    with op_scope(name, "transpose", [image]):
        image = check_image(image)
        perm = [0, 2, 1, 3] if image.shape.ndims == 4 else [1, 0, 2]
        return transpose(image, perm)


def random_crop(value, size, seed: Optional[int] = None, name: Optional[str] = None
                ) -> Tensor:
    """A ``size`` block of ``value`` at an offset drawn uniformly (any rank); a size larger
    than the value fails when run, with TF's assertion message."""
    with op_scope(name, "random_crop", [value, size]) as scope:
        value = convert_to_tensor(value, name="value")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        dims, wanted = value.shape.as_tuple(), static_ints(size)
        if dims is not None and wanted is not None and len(dims) != len(wanted):
            raise ValueError(f"random_crop: size has {len(wanted)} entries for a value of "
                             f"rank {len(dims)}")
        shape = shape_op(value)
        check = Assert(reduce_all(greater_equal(shape, size)),
                       ["Need value.shape >= size, got ", shape, size], summarize=1000)
        with control_dependencies([check]):
            shape = identity(shape, name="control_dependency")
        limit = shape - size + 1
        offset = random_uniform(shape_op(size), dtype=dtypes.int32, maxval=dtypes.int32.max,
                                seed=seed) % limit
        return slice_op(value, offset, size, name=scope)


# ---------------------------------------------------------------------------- patches
def _window(size: int, ksize: int, stride: int, rate: int, padding: str):
    """Output length, and the [out, ksize] input index each tap reads (-1: padding)."""
    span = ksize + (ksize - 1) * (rate - 1)
    if padding == "VALID":
        out = max(-(-(size - span + 1) // stride), 0)
        before = 0
    else:
        out = -(-size // stride)
        before = max((out - 1) * stride + span - size, 0) // 2
    index = np.arange(out)[:, None] * stride - before + np.arange(ksize)[None, :] * rate
    return out, np.where((index >= 0) & (index < size), index, -1)


def _patch_index(height: int, width: int, attrs) -> np.ndarray:
    """[out_h, out_w, kh*kw] flat pixel index each patch tap reads (-1: padding)."""
    _, kh, kw, _ = attrs["ksizes"]
    _, sh, sw, _ = attrs["strides"]
    _, rh, rw, _ = attrs["rates"]
    _, rows = _window(height, kh, sh, rh, attrs["padding"])
    _, cols = _window(width, kw, sw, rw, attrs["padding"])
    flat = rows[:, None, :, None] * width + cols[None, :, None, :]
    valid = (rows[:, None, :, None] >= 0) & (cols[None, :, None, :] >= 0)
    flat = np.where(valid, flat, -1)
    return flat.reshape(rows.shape[0], cols.shape[0], kh * kw)


def _patches_kernel(images, *, ksizes, strides, rates, padding):
    n, height, width, depth = images.shape
    index = _patch_index(height, width, {"ksizes": ksizes, "strides": strides,
                                         "rates": rates, "padding": padding})
    flat = images.reshape(n, height * width, depth)
    flat = np.concatenate([flat, np.zeros((n, 1, depth), images.dtype)], axis=1)
    taps = flat[:, np.where(index < 0, height * width, index)]  # [n, oh, ow, kk, depth]
    return taps.reshape(n, index.shape[0], index.shape[1], -1)


def _infer_patches(inputs, attrs):
    images = inputs[0]
    check_dtype_in(images, REAL_NUMERIC, "ExtractImagePatches", "images")
    if images.shape.ndims not in (None, 4):
        raise ValueError(f"Shape must be rank 4 but is rank {images.shape.ndims} for "
                         f"'ExtractImagePatches' (input shape {images.shape})")
    n, height, width, depth = images.shape.as_tuple() or (None,) * 4
    _, kh, kw, _ = attrs["ksizes"]
    out = []
    for size, k, s, r in ((height, kh, attrs["strides"][1], attrs["rates"][1]),
                          (width, kw, attrs["strides"][2], attrs["rates"][2])):
        if size is None:
            out.append(None)
            continue
        length, _ = _window(size, k, s, r, attrs["padding"])
        if length <= 0:
            raise ValueError(f"Computed output size would be negative: {length} [input_size:"
                             f" {size}, effective_filter_size: {k + (k - 1) * (r - 1)}, "
                             f"stride: {s}]")
        out.append(length)
    return [(images.dtype, TensorShape([n, *out, None if depth is None else kh * kw * depth]))]


define_op("ExtractImagePatches", infer=_infer_patches, kernel=_patches_kernel)


@RegisterGradient("ExtractImagePatches")
def _patches_grad(op, grad):
    """Each patch tap's gradient summed back onto the pixel it read (segment sum over a
    constant index map; needs the static image size)."""
    images = op.inputs[0]
    n, height, width, depth = images.shape.as_tuple() or (None,) * 4
    if height is None or width is None or depth is None:
        raise ValueError("ExtractImagePatches gradient: gradflow needs the static height, "
                         f"width and depth of the images, got {images.shape}")
    attrs = {key: op.get_attr(key) for key in ("ksizes", "strides", "rates", "padding")}
    index = _patch_index(height, width, attrs)
    taps = index.size
    ids = convert_to_tensor(np.where(index < 0, height * width, index).reshape(-1)
                            .astype(np.int32))
    per_tap = reshape(grad, stack([-1, taps, depth]) if n is None else [n, taps, depth])
    summed = unsorted_segment_sum(transpose(per_tap, [1, 0, 2]), ids, height * width + 1)
    pixels = reshape(summed[:height * width], [height, width, -1, depth])
    return [transpose(pixels, [2, 0, 1, 3])]


def _four(values, what: str) -> list:
    values = [int(v) for v in values]
    if len(values) < 4:
        raise ValueError(f"Attr '{what}' of 'ExtractImagePatches' Op passed list of length "
                         f"{len(values)} less than minimum 4.")
    if len(values) != 4 or values[0] != 1 or values[3] != 1:
        raise ValueError(f"{what} must be [1, rows, cols, 1], got {values}")
    return values


def extract_image_patches(images, ksizes=None, strides=None, rates=None, padding=None,
                          name: Optional[str] = None, sizes=None) -> Tensor:
    """The ``ksizes`` patches of a batch of images, every ``strides`` pixels with taps
    ``rates`` apart, flattened into the depth (one ``ExtractImagePatches`` op)."""
    if ksizes is not None and sizes is not None:
        raise ValueError("Cannot specify both 'ksizes' and 'sizes'.")
    ksizes = sizes if ksizes is None else ksizes
    if ksizes is None or strides is None or rates is None or padding is None:
        raise ValueError("extract_image_patches needs sizes, strides, rates and padding")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"Attr 'padding' of 'ExtractImagePatches' Op passed string "
                         f"'{padding}' not in: \"SAME\", \"VALID\".")
    attrs = {"ksizes": _four(ksizes, "ksizes"), "strides": _four(strides, "strides"),
             "rates": _four(rates, "rates"), "padding": padding}
    with op_scope(name, "ExtractImagePatches", [images]) as scope:
        images = convert_to_tensor(images, name="images")
        return apply_op("ExtractImagePatches", [images], name=scope, **attrs)


def extract_patches(images, sizes, strides, rates, padding, name: Optional[str] = None
                    ) -> Tensor:
    """TF's ``image.extract_patches``: ``extract_image_patches`` with ``sizes``."""
    return extract_image_patches(images, sizes, strides, rates, padding, name=name)


# ------------------------------------------------------------------ non-max suppression
def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Intersection over union of one [4] box with [k, 4] boxes (corners in any order)."""
    def extent(b):
        return (np.minimum(b[..., 0], b[..., 2]), np.minimum(b[..., 1], b[..., 3]),
                np.maximum(b[..., 0], b[..., 2]), np.maximum(b[..., 1], b[..., 3]))
    y1, x1, y2, x2 = extent(box)
    oy1, ox1, oy2, ox2 = extent(others)
    inter = np.clip(np.minimum(y2, oy2) - np.maximum(y1, oy1), 0, None) * \
        np.clip(np.minimum(x2, ox2) - np.maximum(x1, ox1), 0, None)
    union = (y2 - y1) * (x2 - x1) + (oy2 - oy1) * (ox2 - ox1) - inter  # float32, as TF
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


def _suppress(boxes, scores, max_output_size, iou_threshold, score_threshold):
    """Greedy NMS: the kept indices, highest score first."""
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise errors.InvalidArgumentError(None, None,
                                          f"boxes must be of shape [num_boxes, 4], got "
                                          f"{list(boxes.shape)}")
    if scores.shape != (boxes.shape[0],):
        raise errors.InvalidArgumentError(None, None, "scores has incompatible shape")
    if not 0 <= float(iou_threshold) <= 1:
        raise errors.InvalidArgumentError(None, None, "iou_threshold must be in [0, 1]")
    if int(max_output_size) < 0:
        raise errors.InvalidArgumentError(None, None, "max_output_size must be non-negative")
    boxes = boxes.astype(np.float32)
    return greedy_suppression(scores, int(max_output_size), np.float32(iou_threshold),
                              score_threshold, lambda i, kept: _iou(boxes[i], boxes[kept]))


def greedy_suppression(scores: np.ndarray, max_output_size: int, threshold, score_threshold,
                       overlap) -> np.ndarray:
    """TF's greedy non-max suppression: walking the candidates above ``score_threshold``
    best first, keeps each whose ``overlap(index, kept)`` with every kept one is at most
    ``threshold``, up to ``max_output_size``."""
    order = np.argsort(-scores.astype(np.float64), kind="stable")
    order = order[scores[order] > score_threshold]
    kept: list[int] = []
    for index in order:
        if len(kept) >= max_output_size:
            break
        if not kept or np.all(overlap(index, kept) <= threshold):
            kept.append(int(index))
    return np.array(kept, np.int32)


def box_iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """TF's float32 intersection over union of a box [4] with boxes [k, 4]."""
    return _iou(box.astype(np.float32), others.astype(np.float32))


def _nms_v3_kernel(boxes, scores, max_output_size, iou_threshold, score_threshold):
    return _suppress(boxes, scores, max_output_size, iou_threshold, score_threshold)


def _nms_v4_kernel(boxes, scores, max_output_size, iou_threshold, score_threshold, *,
                   pad_to_max_output_size):
    kept = _suppress(boxes, scores, max_output_size, iou_threshold, score_threshold)
    valid = np.int32(len(kept))
    if pad_to_max_output_size:
        kept = np.concatenate([kept, np.zeros(int(max_output_size) - len(kept), np.int32)])
    return kept, valid


def _nms_v5_kernel(boxes, scores, max_output_size, iou_threshold, score_threshold,
                   soft_nms_sigma, *, pad_to_max_output_size):
    if float(soft_nms_sigma) != 0.0:
        raise errors.InvalidArgumentError(None, None, "soft_nms_sigma > 0 (Soft-NMS) is not "
                                                      "supported by gradflow")
    kept, valid = _nms_v4_kernel(boxes, scores, max_output_size, iou_threshold,
                                 score_threshold, pad_to_max_output_size=pad_to_max_output_size)
    chosen = np.where(np.arange(len(kept)) < valid, scores[kept] if len(kept) else kept, 0)
    return kept, chosen.astype(scores.dtype), valid


def _infer_nms(outputs: str):
    def infer(inputs, attrs):
        boxes, scores, size = inputs[:3]
        if boxes.shape.ndims not in (None, 2):
            raise ValueError(f"Shape must be rank 2 but is rank {boxes.shape.ndims} for "
                             f"'boxes' of non_max_suppression (input shape {boxes.shape})")
        if scores.shape.ndims not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {scores.shape.ndims} for "
                             f"'scores' of non_max_suppression (input shape {scores.shape})")
        length = None
        if attrs.get("pad_to_max_output_size"):
            length = (static_ints(size) or [None])[0]
        indices = (dtypes.int32, TensorShape([length]))
        scalar = (dtypes.int32, TensorShape([]))
        return {"v3": [indices], "v4": [indices, scalar],
                "v5": [indices, (scores.dtype, TensorShape([length])), scalar]}[outputs]
    return infer


define_op("NonMaxSuppressionV3", infer=_infer_nms("v3"), kernel=_nms_v3_kernel)
define_op("NonMaxSuppressionV4", infer=_infer_nms("v4"), kernel=_nms_v4_kernel)
define_op("NonMaxSuppressionV5", infer=_infer_nms("v5"), kernel=_nms_v5_kernel)
for _op_type in ("NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5"):
    no_gradient_in_tf(_op_type)


def _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold):
    boxes = convert_to_tensor(boxes, name="boxes")
    check_dtype_in(boxes, (dtypes.float16, dtypes.float32), "NonMaxSuppression", "boxes")
    scores = convert_to_tensor(scores, dtype=boxes.dtype, name="scores")
    size = convert_to_tensor(max_output_size, dtype=dtypes.int32, name="max_output_size")
    return boxes, scores, size


def non_max_suppression(boxes, scores, max_output_size, iou_threshold: float = 0.5,
                        score_threshold: float = float("-inf"), name: Optional[str] = None
                        ) -> Tensor:
    """Indices of the boxes greedy non-max suppression keeps, best score first."""
    with op_scope(name, "non_max_suppression", [boxes, scores]):
        iou = convert_to_tensor(iou_threshold, dtype=dtypes.float32, name="iou_threshold")
        low = convert_to_tensor(score_threshold, dtype=dtypes.float32, name="score_threshold")
        with op_scope(None, "NonMaxSuppressionV3", [boxes, scores]) as inner:
            boxes, scores, size = _nms_inputs(boxes, scores, max_output_size, iou_threshold,
                                              score_threshold)
            return apply_op("NonMaxSuppressionV3", [boxes, scores, size, iou, low], name=inner)


def non_max_suppression_with_scores(boxes, scores, max_output_size,
                                    iou_threshold: float = 0.5,
                                    score_threshold: float = float("-inf"),
                                    soft_nms_sigma: float = 0.0,
                                    name: Optional[str] = None) -> tuple[Tensor, Tensor]:
    """Kept indices and their scores (Soft-NMS, ``soft_nms_sigma`` > 0, is not supported)."""
    if float(soft_nms_sigma) != 0.0:
        raise ValueError("soft_nms_sigma: Soft-NMS (a sigma other than 0) is not supported "
                         "by gradflow")
    with op_scope(name, "non_max_suppression_with_scores", [boxes, scores]):
        iou = convert_to_tensor(iou_threshold, dtype=dtypes.float32, name="iou_threshold")
        low = convert_to_tensor(score_threshold, dtype=dtypes.float32, name="score_threshold")
        sigma = convert_to_tensor(soft_nms_sigma, dtype=dtypes.float32, name="soft_nms_sigma")
        with op_scope(None, "NonMaxSuppressionV5", [boxes, scores]) as inner:
            boxes, scores, size = _nms_inputs(boxes, scores, max_output_size, iou_threshold,
                                              score_threshold)
            indices, kept_scores, _ = apply_op(
                "NonMaxSuppressionV5", [boxes, scores, size, iou, low, sigma], name=inner,
                pad_to_max_output_size=False)
            return indices, kept_scores


def non_max_suppression_padded(boxes, scores, max_output_size, iou_threshold: float = 0.5,
                               score_threshold: float = float("-inf"),
                               pad_to_max_output_size: bool = False,
                               name: Optional[str] = None, sorted_input: bool = False,
                               canonicalized_coordinates: bool = False, tile_size: int = 512
                               ) -> tuple[Tensor, Tensor]:
    """Kept indices (zero-padded to ``max_output_size`` when asked) and how many are
    valid, for one set of boxes [num_boxes, 4] (batched boxes are not supported)."""
    with op_scope(name, "non_max_suppression_padded", [boxes, scores]):
        boxes_t = convert_to_tensor(boxes, name="boxes")
        if boxes_t.shape.ndims not in (None, 2):
            raise ValueError("boxes: gradflow's non_max_suppression_padded takes one set of "
                             f"boxes [num_boxes, 4], got shape {boxes_t.shape}")
        iou = convert_to_tensor(iou_threshold, dtype=dtypes.float32, name="iou_threshold")
        low = convert_to_tensor(score_threshold, dtype=dtypes.float32, name="score_threshold")
        with op_scope(None, "NonMaxSuppressionV4", [boxes_t, scores]) as inner:
            boxes_t, scores, size = _nms_inputs(boxes_t, scores, max_output_size,
                                                iou_threshold, score_threshold)
            indices, valid = apply_op("NonMaxSuppressionV4", [boxes_t, scores, size, iou, low],
                                      name=inner,
                                      pad_to_max_output_size=bool(pad_to_max_output_size))
            return indices, valid


# --------------------------------------------------------------------- bounding boxes
_PALETTE = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1],
                     [0.5, 0, 0.5, 1], [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1],
                     [0, 1, 1, 1], [1, 0, 1, 1]], np.float32)


def _draw_kernel(images, boxes, colors=None):
    canvas = images.copy()
    _, height, width, depth = images.shape
    palette = _PALETTE if colors is None or colors.size == 0 else \
        np.asarray(colors, np.float32).reshape(-1, colors.shape[-1])
    if depth == 1 and (colors is None or colors.size == 0):
        palette = np.ones((1, 1), np.float32)  # TF draws every box white on a grey image
    if palette.shape[1] < depth:
        raise errors.InvalidArgumentError(None, None, "colors must provide a value for every "
                                                      "channel of the images")
    for b, bb in np.ndindex(boxes.shape[0], boxes.shape[1]):
        color = palette[bb % len(palette), :depth].astype(images.dtype)
        top, left, bottom, right = (int(v) for v in (
            np.float32(boxes[b, bb, 0]) * (height - 1), np.float32(boxes[b, bb, 1]) * (width - 1),
            np.float32(boxes[b, bb, 2]) * (height - 1), np.float32(boxes[b, bb, 3]) * (width - 1)))
        if top > bottom or left > right or top >= height or bottom < 0 or left >= width \
                or right < 0:
            continue
        rows = slice(max(top, 0), min(bottom, height - 1) + 1)
        cols = slice(max(left, 0), min(right, width - 1) + 1)
        if top >= 0:
            canvas[b, top, cols] = color
        if bottom < height:
            canvas[b, bottom, cols] = color
        if left >= 0:
            canvas[b, rows, left] = color
        if right < width:
            canvas[b, rows, right] = color
    return canvas


def _infer_draw(inputs, attrs):
    images, boxes = inputs[:2]
    check_dtype_in(images, (dtypes.float32, dtypes.float16), "DrawBoundingBoxes", "images")
    if images.shape.ndims not in (None, 4):
        raise ValueError(f"Shape must be rank 4 but is rank {images.shape.ndims} for "
                         f"'images' of 'DrawBoundingBoxes' (input shape {images.shape})")
    if boxes.shape.ndims not in (None, 3):
        raise ValueError(f"Shape must be rank 3 but is rank {boxes.shape.ndims} for "
                         f"'boxes' of 'DrawBoundingBoxes' (input shape {boxes.shape})")
    return [(images.dtype, images.shape)]


define_op("DrawBoundingBoxes", infer=_infer_draw, kernel=_draw_kernel)
define_op("DrawBoundingBoxesV2", infer=_infer_draw, kernel=_draw_kernel)
NotDifferentiable("DrawBoundingBoxes")  # as in TF
no_gradient_in_tf("DrawBoundingBoxesV2")


def draw_bounding_boxes(images, boxes, name: Optional[str] = None, colors=None) -> Tensor:
    """Draws each box (normalised [y1, x1, y2, x2]) as a one-pixel outline in float
    images [N, H, W, C]; colours cycle through TF's palette unless ``colors`` is given."""
    default = "DrawBoundingBoxes" if colors is None else "DrawBoundingBoxesV2"
    with op_scope(name, default, [images, boxes]) as scope:
        images = convert_to_tensor(images, name="images")
        boxes = convert_to_tensor(boxes, dtype=dtypes.float32, name="boxes")
        if colors is None:
            return apply_op("DrawBoundingBoxes", [images, boxes], name=scope)
        colors = convert_to_tensor(colors, dtype=dtypes.float32, name="colors")
        return apply_op("DrawBoundingBoxesV2", [images, boxes, colors], name=scope)


def _rounded(value: float) -> int:
    """Rounds half to even, as C's lrintf does in TF's kernel."""
    return int(np.rint(np.float32(value)))


def _crop_try(gen: np.random.Generator, height: int, width: int, area_range, ratio_range):
    """One random crop (y, x, h, w) with area and aspect ratio in range, or None: TF's
    scheme (a height drawn between the area bounds, a one-pixel nudge for rounding)."""
    ratio = np.float32(gen.uniform(*ratio_range))
    low_area = np.float32(area_range[0] * width * height)
    high_area = np.float32(area_range[1] * width * height)
    crop_h = _rounded(np.sqrt(low_area / ratio))
    max_h = _rounded(np.sqrt(high_area / ratio))
    if _rounded(max_h * ratio) > width:
        max_h = int((width + 0.5 - 1e-7) / ratio)
        if _rounded(max_h * ratio) > width:
            max_h -= 1
    max_h = min(max_h, height)
    crop_h = min(crop_h, max_h)
    if crop_h < max_h:
        crop_h += int(gen.integers(0, max_h - crop_h + 1))
    crop_w = _rounded(crop_h * ratio)
    if crop_h * crop_w < low_area:
        crop_h += 1
        crop_w = _rounded(crop_h * ratio)
    if crop_h * crop_w > high_area:
        crop_h -= 1
        crop_w = _rounded(crop_h * ratio)
    area = crop_h * crop_w
    if not (low_area <= area <= high_area and 0 < crop_w <= width and 0 < crop_h <= height):
        return None
    # offsets leave the last row/column out, as TF draws them
    top = int(gen.integers(0, height - crop_h)) if crop_h < height else 0
    left = int(gen.integers(0, width - crop_w)) if crop_w < width else 0
    return top, left, crop_h, crop_w


def _covers(crop, boxes: np.ndarray, height: int, width: int, fraction: float) -> bool:
    """Whether the crop covers at least ``fraction`` of some box's area (boxes in whole
    pixels, truncated as TF converts them)."""
    y, x, h, w = crop
    for y1, x1, y2, x2 in boxes:
        by1, bx1 = int(np.float32(y1) * height), int(np.float32(x1) * width)
        by2, bx2 = int(np.float32(y2) * height), int(np.float32(x2) * width)
        box_area = (by2 - by1) * (bx2 - bx1)
        inter = max(min(by2, y + h) - max(by1, y), 0) * max(min(bx2, x + w) - max(bx1, x), 0)
        if box_area > 0 and inter / box_area >= fraction:
            return True
    return False


def _sample_box_kernel(ctx, image_size, bounding_boxes, min_object_covered, *, seed, seed2,
                       stream, aspect_ratio_range, area_range, max_attempts,
                       use_image_if_no_bounding_boxes):
    height, width = int(image_size[0]), int(image_size[1])
    boxes = np.asarray(bounding_boxes, np.float64).reshape(-1, 4)
    if boxes.size == 0:
        if not use_image_if_no_bounding_boxes:
            raise errors.InvalidArgumentError(
                None, None, "No bounding boxes provided as input. One must enable "
                            "use_image_if_no_bounding_boxes if you wish to not provide any "
                            "bounding boxes.")
        boxes = np.array([[0.0, 0.0, 1.0, 1.0]])
    key = ("image_box_sampler", stream)
    bits = np.random.PCG64([seed, seed2] if seed or seed2 else None)
    if ctx.is_initialized(key):
        bits.state = ctx.read_variable(key, "image_box_sampler")
    gen = np.random.Generator(bits)
    crop = (0, 0, height, width)
    for _ in range(max_attempts):
        tried = _crop_try(gen, height, width, area_range, aspect_ratio_range)
        if tried is not None and _covers(tried, boxes, height, width,
                                         float(min_object_covered)):
            crop = tried
            break
    ctx.write_variable(key, bits.state)
    y, x, h, w = crop
    box = np.array([[[y / height, x / width, (y + h) / height, (x + w) / width]]], np.float32)
    dtype = image_size.dtype
    return (np.array([y, x, 0], dtype), np.array([h, w, -1], dtype), box)


define_op("SampleDistortedBoundingBoxV2", kernel=_sample_box_kernel, stateful=True,
          needs_context=True, state_key=lambda attrs: ("image_box_sampler", attrs["stream"]),
          infer=lambda inputs, attrs: [(inputs[0].dtype, TensorShape([3])),
                                       (inputs[0].dtype, TensorShape([3])),
                                       (dtypes.float32, TensorShape([1, 1, 4]))])
NotDifferentiable("SampleDistortedBoundingBoxV2")  # as in TF


def sample_distorted_bounding_box(image_size, bounding_boxes, seed: Optional[int] = None,
                                  seed2: Optional[int] = None, min_object_covered=0.1,
                                  aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 1.0),
                                  max_attempts: int = 100,
                                  use_image_if_no_bounding_boxes: bool = False,
                                  name: Optional[str] = None) -> tuple[Tensor, Tensor, Tensor]:
    """A random crop (begin, size, and the crop as a box) covering at least
    ``min_object_covered`` of one of ``bounding_boxes``, with aspect ratio and area in
    range; the whole image if ``max_attempts`` draws find none. Seeded by TF1's rules
    (``seed2``, TF's deprecated second seed, overrides the op seed)."""
    if max_attempts <= 0:
        raise ValueError("max_attempts must be positive")
    for pair, what in ((aspect_ratio_range, "aspect_ratio_range"), (area_range, "area_range")):
        if len(pair) != 2 or pair[0] <= 0 or pair[1] < pair[0]:
            raise ValueError(f"{what} must be two increasing positive numbers, got {pair}")
    with op_scope(name, "sample_distorted_bounding_box", [image_size, bounding_boxes]):
        with op_scope(None, "SampleDistortedBoundingBoxV2", [image_size]) as inner:
            size = convert_to_tensor(image_size, name="image_size")
            check_dtype_in(size, (dtypes.uint8, dtypes.int8, dtypes.int16, dtypes.int32,
                                  dtypes.int64), "SampleDistortedBoundingBoxV2", "image_size")
            boxes = convert_to_tensor(bounding_boxes, dtype=dtypes.float32,
                                      name="bounding_boxes")
            if boxes.shape.ndims not in (None, 3):
                raise ValueError(f"Shape must be rank 3 but is rank {boxes.shape.ndims} for "
                                 "'bounding_boxes' of 'SampleDistortedBoundingBoxV2' (input "
                                 f"shape {boxes.shape})")
            covered = convert_to_tensor(min_object_covered, dtype=dtypes.float32,
                                        name="min_object_covered")
            graph_seed, op_seed = get_seed(seed)
            if seed2 is not None:
                op_seed = seed2
            return tuple(apply_op(
                "SampleDistortedBoundingBoxV2", [size, boxes, covered], name=inner,
                seed=graph_seed or 0, seed2=op_seed or 0, stream=next(_streams),
                aspect_ratio_range=[float(v) for v in aspect_ratio_range],
                area_range=[float(v) for v in area_range], max_attempts=int(max_attempts),
                use_image_if_no_bounding_boxes=bool(use_image_if_no_bounding_boxes)))


# ----------------------------------------------------------------------------- metrics
def total_variation(images, name: Optional[str] = None) -> Tensor:
    """Sum of absolute differences of neighbouring pixels: a scalar for one image, one
    value per image for a batch."""
    with op_scope(name, "total_variation", [images]):
        images = convert_to_tensor(images, name="images")
        ndims = images.shape.ndims
        if ndims == 3:
            rows = images[1:, :, :] - images[:-1, :, :]
            cols = images[:, 1:, :] - images[:, :-1, :]
            axis = None
        elif ndims == 4:
            rows = images[:, 1:, :, :] - images[:, :-1, :, :]
            cols = images[:, :, 1:, :] - images[:, :, :-1, :]
            axis = [1, 2, 3]
        else:
            raise ValueError("'images' must be either 3 or 4-dimensional.")
        return reduce_sum(abs_op(rows), axis=axis) + reduce_sum(abs_op(cols), axis=axis)


def image_gradients(image) -> tuple[Tensor, Tensor]:
    """Forward differences (dy, dx) of a batch [N, H, W, C], zero in the last row/column."""
    with atomic([image]):
        image = convert_to_tensor(image, name="image")
        if image.shape.ndims != 4:
            raise ValueError("image_gradients expects a 4D tensor [batch_size, h, w, d], not "
                             f"{image.shape}.")
        dims = image_dimensions(image)
        dy = image[:, 1:, :, :] - image[:, :-1, :, :]
        dx = image[:, :, 1:, :] - image[:, :, :-1, :]
        dy = concat([dy, zeros(stack([dims[0], 1, dims[2], dims[3]]), image.dtype)], 1)
        dx = concat([dx, zeros(stack([dims[0], dims[1], 1, dims[3]]), image.dtype)], 2)
        return reshape(dy, shape_op(image)), reshape(dx, shape_op(image))


_SOBEL = np.array([[[-1, -2, -1], [0, 0, 0], [1, 2, 1]],
                   [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]], np.float32)


def sobel_edges(image) -> Tensor:
    """Sobel responses [N, H, W, C, 2] (dy, dx) of a batch, reflecting at the borders
    (the two kernels tiled over the channels, as TF builds them; any depth)."""
    with atomic([image]):
        image = convert_to_tensor(image, name="image")
        if image.shape.ndims not in (None, 4):
            raise ValueError(f"Shape must be rank 4 but is rank {image.shape.ndims} for "
                             f"'MirrorPad' (input shape {image.shape})")
        dims = image_dimensions(image)
        kernels = convert_to_tensor(np.transpose(_SOBEL, (1, 2, 0))[:, :, None, :]
                                    .astype(image.dtype.as_numpy_dtype))
        filters = tile(kernels, stack([1, 1, dims[3], 1]) if isinstance(dims[3], Tensor)
                       else [1, 1, dims[3], 1], name="sobel_filters")
        padded = pad(image, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
        edges = depthwise_conv2d(padded, filters, [1, 1, 1, 1], "VALID")
        return reshape(edges, stack([*dims, 2]))


def psnr(a, b, max_val, name: Optional[str] = None) -> Tensor:
    """Peak signal-to-noise ratio of each image pair, in dB (float images, or integer
    images converted to float)."""
    with op_scope(name, "PSNR", [a, b]):
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b")
        _check_pair(a, b)
        max_val = cast(max_val, a.dtype)
        max_val = convert_image_dtype(max_val, dtypes.float32)
        a = convert_image_dtype(a, dtypes.float32)
        b = convert_image_dtype(b, dtypes.float32)
        mse = reduce_mean(squared_difference(a, b), [-3, -2, -1])
        return subtract(20 * log(max_val) / np.log(10.0), 10.0 / np.log(10.0) * log(mse),
                        name="psnr")


def _check_pair(a: Tensor, b: Tensor) -> None:
    """psnr's images must broadcast: TF's message for the first clash from the right."""
    dims_a, dims_b = a.shape.as_tuple(), b.shape.as_tuple()
    if dims_a is None or dims_b is None:
        return
    for p, q in zip(reversed(dims_a), reversed(dims_b)):
        if None not in (p, q) and p != q and 1 not in (p, q):
            raise ValueError(f"Dimensions must be equal, but are {p} and {q} for 'PSNR' "
                             f"(shapes {a.shape} and {b.shape})")


def _gaussian(size: int, sigma: float) -> np.ndarray:
    coords = np.arange(size, dtype=np.float32) - (size - 1) / 2.0
    g = np.exp(-(coords[:, None] ** 2 + coords[None, :] ** 2) / (2 * sigma ** 2))
    return (g / g.sum()).astype(np.float32)


def _ssim_inputs(img1, img2, max_val, filter_size: int, what: str, static: bool):
    """Both images as float32, their [..., H, W, C] dims (ints where known, else scalar
    tensors; all ints when ``static`` is asked for) and max_val as float32."""
    a = convert_image_dtype(convert_to_tensor(img1, name="img1"), dtypes.float32)
    b = convert_image_dtype(convert_to_tensor(img2, name="img2"), dtypes.float32)
    if a.shape.ndims is None or a.shape.ndims < 3:
        raise ValueError(f"{what}: the images need a known rank of at least 3, got {a.shape}")
    if static and any(d is None for d in a.shape.as_tuple()[-3:]):
        raise ValueError(f"{what}: gradflow needs images of static height, width and depth, "
                         f"got {a.shape}")
    if b.shape.ndims is not None and not a.shape[-3:].is_compatible_with(b.shape[-3:]):
        raise ValueError(f"Shapes {a.shape[-3:]} and {b.shape[-3:]} are incompatible")
    dims = image_dimensions(a, (-3, -2, -1))
    for size in dims[-3:-1]:
        if _is_int(size) and size < filter_size:
            raise ValueError(f"Negative dimension size caused by subtracting {filter_size} "
                             f"from {size} in {what}'s filter")
    return a, b, dims, convert_image_dtype(cast(max_val, a.dtype), dtypes.float32)


def _ssim_parts(a: Tensor, b: Tensor, tail: tuple, max_val: Tensor, filter_size: int,
                filter_sigma: float, k1: float, k2: float) -> tuple[Tensor, Tensor]:
    """SSIM's index map and contrast-structure map of images flattened to [-1, H, W, C]
    (Gaussian window, VALID positions)."""
    window = convert_to_tensor(_gaussian(filter_size, filter_sigma)[:, :, None, None])
    kernel = tile(window, _int_vector([1, 1, tail[2], 1]))
    flat = _int_vector([-1, *tail])

    def blur(x):
        return depthwise_conv2d(reshape(x, flat), kernel, [1, 1, 1, 1], "VALID")

    c1 = (k1 * max_val) ** 2
    c2 = (k2 * max_val) ** 2
    mean_a, mean_b = blur(a), blur(b)
    luminance = (2.0 * mean_a * mean_b + c1) / (mean_a * mean_a + mean_b * mean_b + c1)
    cross = blur(a * b) - mean_a * mean_b
    variance = blur(a * a) + blur(b * b) - mean_a * mean_a - mean_b * mean_b
    structure = (2.0 * cross + c2) / (variance + c2)
    return luminance * structure, structure


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer))


def _int_vector(items: list):
    """A shape from ints and scalar tensors: the list itself when all are ints."""
    return items if all(_is_int(v) for v in items) else stack(items)


def _per_image(values: Tensor, lead: list) -> Tensor:
    """[-1] per-image values back under the images' leading dims (ints or tensors)."""
    return values[0] if not lead else reshape(values, stack(lead))


def ssim(img1, img2, max_val, filter_size: int = 11, filter_sigma: float = 1.5,
         k1: float = 0.01, k2: float = 0.03, return_index_map: bool = False) -> Tensor:
    """Structural similarity of each image pair (Gaussian window, VALID positions)."""
    with op_scope(None, "SSIM", [img1, img2]):
        a, b, dims, max_val = _ssim_inputs(img1, img2, max_val, filter_size, "ssim", False)
        index_map, _ = _ssim_parts(a, b, dims[-3:], max_val, filter_size, filter_sigma, k1,
                                   k2)
        lead = image_dimensions(a, range(a.shape.ndims - 3))[:-3]
        if lead:  # the maps back under the images' leading dimensions
            index_map = reshape(index_map, _int_vector([*lead, *_map_dims(index_map)]))
        else:
            index_map = index_map[0]
        if return_index_map:  # TF's map averages the channels
            return reduce_mean(index_map, [-1])
        return reduce_mean(reduce_mean(index_map, [-3, -2]), [-1])


def _map_dims(index_map: Tensor) -> list:
    """The [H', W', C] of a flat [-1, H', W', C] map: ints where known, else tensors."""
    return image_dimensions(index_map, (1, 2, 3))[1:]


_MS_SSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def ssim_multiscale(img1, img2, max_val, power_factors=_MS_SSIM_WEIGHTS,
                    filter_size: int = 11, filter_sigma: float = 1.5, k1: float = 0.01,
                    k2: float = 0.03) -> Tensor:
    """Multi-scale SSIM: the contrast-structure terms of ``len(power_factors)`` scales
    (each a 2x2 average pool of the last, odd sizes padded symmetrically) and the SSIM of
    the coarsest, combined as a weighted geometric mean, averaged over channels."""
    with op_scope(None, "MS-SSIM", [img1, img2]):
        a, b, dims, max_val = _ssim_inputs(img1, img2, max_val, filter_size,
                                           "ssim_multiscale", True)
        lead = image_dimensions(a, range(a.shape.ndims - 3))[:-3]
        tail = tuple(dims[-3:])
        a, b = reshape(a, [-1, *tail]), reshape(b, [-1, *tail])
        terms = []
        for scale in range(len(power_factors)):
            if scale:
                extra = [tail[0] % 2, tail[1] % 2]
                if any(extra):
                    pairs = [[0, 0], [0, extra[0]], [0, extra[1]], [0, 0]]
                    a, b = pad(a, pairs, mode="SYMMETRIC"), pad(b, pairs, mode="SYMMETRIC")
                a = avg_pool(a, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
                b = avg_pool(b, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
                tail = ((tail[0] + extra[0]) // 2, (tail[1] + extra[1]) // 2, tail[2])
                if min(tail[:2]) < filter_size:
                    raise ValueError(f"ssim_multiscale: scale {scale} is {tail[0]}x{tail[1]}, "
                                     f"smaller than the filter ({filter_size}); the images "
                                     "are too small for this many power factors")
            index_map, structure = _ssim_parts(a, b, tail, max_val, filter_size, filter_sigma,
                                               k1, k2)
            last = scale == len(power_factors) - 1
            terms.append(relu(reduce_mean(index_map if last else structure, [-3, -2])))
        stacked = stack(terms, axis=-1)
        weights = convert_to_tensor(np.array(power_factors, np.float32), name="power_factors")
        combined = reduce_prod(pow_op(stacked, weights), [-1])
        return _per_image(reduce_mean(combined, [-1]), lead)


# ----------------------------------------------------------------------------- glimpses
def _glimpse_kernel(images, size, offsets, *, centered, normalized, uniform_noise, noise):
    batch, height, width, depth = images.shape
    rows, cols = (int(v) for v in size)
    if offsets.shape != (batch, 2):
        raise errors.InvalidArgumentError(None, None, f"offsets must be [{batch}, 2], got "
                                                      f"{list(offsets.shape)}")
    y, x = offsets[:, 0].astype(np.float32), offsets[:, 1].astype(np.float32)
    if normalized:
        y, x = y * np.float32(height), x * np.float32(width)
    if centered:
        y = y / np.float32(2) + np.float32(height / 2)
        x = x / np.float32(2) + np.float32(width / 2)
    # the corner is truncated towards zero, as TF's kernel converts it
    top = np.trunc(y - np.float32(rows / 2)).astype(np.int64)
    left = np.trunc(x - np.float32(cols / 2)).astype(np.int64)
    row_at = top[:, None] + np.arange(rows)[None, :]
    col_at = left[:, None] + np.arange(cols)[None, :]
    inside = ((row_at >= 0) & (row_at < height))[:, :, None] & \
        ((col_at >= 0) & (col_at < width))[:, None, :]
    picked = images[np.arange(batch)[:, None, None], np.clip(row_at, 0, height - 1)[:, :, None],
                    np.clip(col_at, 0, width - 1)[:, None, :]].astype(np.float32)
    if noise == "zero":
        fill = np.zeros_like(picked)
    else:
        gen = np.random.default_rng()
        if noise == "uniform":
            low = images.min(axis=(1, 2))[:, None, None, :]
            high = images.max(axis=(1, 2))[:, None, None, :]
            fill = gen.uniform(0, 1, picked.shape) * (high - low) + low
        else:
            mean = images.mean(axis=(1, 2))[:, None, None, :]
            std = images.std(axis=(1, 2))[:, None, None, :]
            fill = gen.standard_normal(picked.shape) * std + mean
    return np.where(inside[..., None], picked, fill).astype(np.float32)


def _infer_glimpse(inputs, attrs):
    images, size, offsets = inputs
    check_dtype_in(images, (dtypes.float32,), "ExtractGlimpse", "input")
    if images.shape.ndims not in (None, 4):
        raise ValueError(f"Shape must be rank 4 but is rank {images.shape.ndims} for 'input' of "
                         f"'ExtractGlimpse' (input shape {images.shape})")
    dims = images.shape.as_tuple() or (None,) * 4
    count = offsets.shape.as_tuple()[0] if offsets.shape.ndims == 2 else None
    if None not in (dims[0], count) and dims[0] != count:
        raise ValueError(f"Dimensions must be equal, but are {dims[0]} and {count} for "
                         "'ExtractGlimpse' (the batch of input and of offsets)")
    hw = tuple(static_ints(size) or (None, None))
    return [(dtypes.float32, TensorShape([dims[0], *hw, dims[3]]))]


# stateful: its noise must be drawn on every run, never folded into a constant
define_op("ExtractGlimpse", infer=_infer_glimpse, kernel=_glimpse_kernel, stateful=True)
NotDifferentiable("ExtractGlimpse")  # as in TF


def extract_glimpse(input, size, offsets, centered: bool = True,  # noqa: A002 - TF's name
                    normalized: bool = True, uniform_noise: bool = True,
                    name: Optional[str] = None) -> Tensor:
    """A ``size`` window of each image at ``offsets`` [batch, 2] (y, x: from the centre
    when ``centered``, as fractions of the size when ``normalized``); pixels outside the
    image are noise: uniform between the channel's extremes, else normal with its mean
    and standard deviation (TF1's ``uniform_noise``)."""
    with op_scope(name, "ExtractGlimpse", [input, size, offsets]) as scope:
        images = convert_to_tensor(input, name="input")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        offsets = convert_to_tensor(offsets, dtype=dtypes.float32, name="offsets")
        return apply_op("ExtractGlimpse", [images, size, offsets], name=scope,
                        centered=bool(centered), normalized=bool(normalized),
                        uniform_noise=bool(uniform_noise),
                        noise="uniform" if uniform_noise else "gaussian")
