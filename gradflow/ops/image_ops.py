"""Image resizing: TF1's ``resize_images`` on ``ResizeBilinear``, ``ResizeBicubic``,
``ResizeArea`` and ``ResizeNearestNeighbor``.

The primitives under TF's type names, on ``[batch, height, width, channels]`` images
with a 2-element int32 ``size``; ``align_corners`` and ``half_pixel_centers`` as TF1's
attrs (TF1's ``resize_images`` uses neither). The resizes are separable linear maps:
the output is ``Wy @ image @ Wx^T`` per batch and channel, with ``Wy``/``Wx`` the
interpolation weights of each axis (two taps per row for bilinear, four for bicubic, the
covered span for area, one for nearest), so each gradient is the transposed map (area
has none, as in TF). Bilinear and bicubic always give
float32 (as TF's ops do); nearest keeps the image's dtype. ``resize_images`` adds TF1's
conveniences: 3-D images, the ``resize`` name scope, ``ResizeMethod``, a no-op for an
unchanged static size, and ``preserve_aspect_ratio`` (static sizes only here).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.array.shapes import expand_dims, squeeze
from gradflow.ops.array.slicing import slice as slice_tensor
from gradflow.ops.common import graph_for, static_ints
from gradflow.ops.primitives import shape as shape_of

__all__ = ["ResizeMethod", "resize_images", "resize_bilinear", "resize_bicubic", "resize_area",
           "resize_nearest_neighbor",
           "resize_bilinear_grad", "resize_nearest_neighbor_grad"]

# TF's order (its message lists bfloat16 twice).
_RESIZE_TYPES = (dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32,
                 dtypes.int64, dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64)
_RESIZE_TYPE_NAMES = ", ".join([d.name for d in _RESIZE_TYPES] + ["bfloat16"])


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    """Input pixels per output pixel, in float32 as TF computes it."""
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def _bilinear_weights(in_size: int, out_size: int, align_corners: bool,
                      half_pixel: bool) -> np.ndarray:
    """The ``[out_size, in_size]`` bilinear interpolation matrix of one axis."""
    scale = _scale(in_size, out_size, align_corners)
    positions = np.arange(out_size, dtype=np.float32)
    if half_pixel:
        positions = (positions + np.float32(0.5)) * scale - np.float32(0.5)
    else:
        positions = positions * scale
    floor = np.floor(positions)
    lower = np.maximum(floor.astype(np.int64), 0)
    upper = np.minimum(np.ceil(positions).astype(np.int64), in_size - 1)
    lerp = (positions - floor).astype(np.float64)
    weights = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    np.add.at(weights, (rows, lower), 1.0 - lerp)
    np.add.at(weights, (rows, upper), lerp)
    return weights


_CUBIC_TABLE_SIZE = 1024


def _cubic_coefficients(t: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution weights of the taps at offsets -1, 0, 1, 2 from the floor."""
    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=-1)


def _bicubic_weights(in_size: int, out_size: int, align_corners: bool,
                     half_pixel: bool) -> np.ndarray:
    """The ``[out_size, in_size]`` bicubic interpolation matrix of one axis: TF's legacy
    kernel (a = -0.75, taps clamped at the borders) or, with half-pixel centres, Keys'
    (a = -0.5, the weights of taps outside the image dropped and renormalised)."""
    scale = _scale(in_size, out_size, align_corners)
    positions = np.arange(out_size, dtype=np.float32)
    if half_pixel:
        positions = (positions + np.float32(0.5)) * scale - np.float32(0.5)
    else:
        positions = positions * scale
    floor = np.floor(positions)
    taps = floor.astype(np.int64)[:, None] + np.arange(-1, 3)
    # TF reads the weights from a table of 1024 steps per pixel, rounded to float32.
    steps = np.rint((positions - floor) * np.float32(_CUBIC_TABLE_SIZE)) / _CUBIC_TABLE_SIZE
    coefficients = _cubic_coefficients(steps.astype(np.float64),
                                       -0.5 if half_pixel else -0.75).astype(np.float32)
    if half_pixel:
        inside = (taps >= 0) & (taps < in_size)
        coefficients = np.where(inside, coefficients, np.float32(0.0))
        coefficients = coefficients / coefficients.sum(axis=1, keepdims=True)
    weights = np.zeros((out_size, in_size))
    rows = np.repeat(np.arange(out_size), 4)
    np.add.at(weights, (rows, np.clip(taps, 0, in_size - 1).reshape(-1)),
              coefficients.reshape(-1))
    return weights


def _area_weights(in_size: int, out_size: int, align_corners: bool) -> np.ndarray:
    """The ``[out_size, in_size]`` area-averaging matrix of one axis: each output pixel
    averages the input span ``[i * scale, (i + 1) * scale)``, partly covered pixels
    weighted by their covered fraction."""
    scale = float(_scale(in_size, out_size, align_corners))
    weights = np.zeros((out_size, in_size))
    for i in range(out_size):
        start, stop = i * scale, (i + 1) * scale
        for j in range(int(np.floor(start)), int(np.ceil(stop))):
            covered = min(j + 1.0, stop) - max(float(j), start)
            weights[i, min(j, in_size - 1)] += covered / scale
    return weights


def _nearest_indices(in_size: int, out_size: int, align_corners: bool,
                     half_pixel: bool) -> np.ndarray:
    """The input pixel each output pixel of one axis copies."""
    scale = _scale(in_size, out_size, align_corners)
    positions = np.arange(out_size, dtype=np.float32)
    if half_pixel:
        positions = (positions + np.float32(0.5)) * scale
    else:
        positions = positions * scale
    # roundf rounds halves away from zero; the positions are never negative.
    picked = np.floor(positions + np.float32(0.5)) if align_corners else np.floor(positions)
    return np.clip(picked.astype(np.int64), 0, in_size - 1)


def _nearest_weights(in_size: int, out_size: int, align_corners: bool,
                     half_pixel: bool) -> np.ndarray:
    weights = np.zeros((out_size, in_size))
    weights[np.arange(out_size), _nearest_indices(in_size, out_size, align_corners,
                                                  half_pixel)] = 1.0
    return weights


def _check_size(size: np.ndarray, op_type: str) -> tuple[int, int]:
    size = np.asarray(size).reshape(-1)
    if size.shape != (2,):
        raise ValueError(f"{op_type}: size must be 1-dimensional with 2 elements, got "
                         f"shape {list(np.shape(size))}")
    height, width = int(size[0]), int(size[1])
    if height <= 0 or width <= 0:
        raise ValueError(f"{op_type}: output dimensions must be positive, got "
                         f"[{height}, {width}]")
    return height, width


def _check_centers(align_corners: bool, half_pixel_centers: bool) -> None:
    if align_corners and half_pixel_centers:
        raise errors.InvalidArgumentError(
            None, None, "If half_pixel_centers is True, align_corners must be False.")


def _separable(images: np.ndarray, wy: np.ndarray, wx: np.ndarray) -> np.ndarray:
    return np.einsum("oh,bhwc,pw->bopc", wy, images.astype(np.float64), wx)


def _infer_resize(inputs, attrs, op_type: str, dtype: dtypes.DType):
    images, size = inputs
    if images.shape.ndims is not None and images.shape.ndims != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {images.shape.ndims} for "
                         f"'{op_type}' with input shapes: {images.shape}, {size.shape}.")
    if size.shape.ndims is not None and size.shape.as_list() not in ([2], [None]):
        raise ValueError(f"Dimension must be 2 but is {size.shape.as_list()[0]} for "
                         f"'{op_type}' with input shapes: {images.shape}, {size.shape}.")
    shape = images.shape.with_rank(4).as_list() if images.shape.ndims else [None] * 4
    new_size = static_ints(size) or [None, None]
    return [(dtype, TensorShape([shape[0], new_size[0], new_size[1], shape[3]]))]


def _resize_bilinear_kernel(images, size, *, align_corners: bool, half_pixel_centers: bool, **_):
    height, width = _check_size(size, "ResizeBilinear")
    _check_centers(align_corners, half_pixel_centers)
    _, in_h, in_w, _ = images.shape
    wy = _bilinear_weights(in_h, height, align_corners, half_pixel_centers)
    wx = _bilinear_weights(in_w, width, align_corners, half_pixel_centers)
    return _separable(images, wy, wx).astype(np.float32)


def _resize_bicubic_kernel(images, size, *, align_corners: bool, half_pixel_centers: bool,
                           **_):
    height, width = _check_size(size, "ResizeBicubic")
    _check_centers(align_corners, half_pixel_centers)
    _, in_h, in_w, _ = images.shape
    wy = _bicubic_weights(in_h, height, align_corners, half_pixel_centers)
    wx = _bicubic_weights(in_w, width, align_corners, half_pixel_centers)
    return _separable(images, wy, wx).astype(np.float32)


def _resize_bicubic_grad_kernel(grads, original_image, *, align_corners: bool,
                                half_pixel_centers: bool, **_):
    _, in_h, in_w, _ = original_image.shape
    _, out_h, out_w, _ = grads.shape
    wy = _bicubic_weights(in_h, out_h, align_corners, half_pixel_centers)
    wx = _bicubic_weights(in_w, out_w, align_corners, half_pixel_centers)
    return _separable(grads, wy.T, wx.T).astype(original_image.dtype)


def _resize_area_kernel(images, size, *, align_corners: bool, **_):
    height, width = _check_size(size, "ResizeArea")
    _, in_h, in_w, _ = images.shape
    return _separable(images, _area_weights(in_h, height, align_corners),
                      _area_weights(in_w, width, align_corners)).astype(np.float32)


def _resize_bilinear_grad_kernel(grads, original_image, *, align_corners: bool,
                                 half_pixel_centers: bool, **_):
    _, in_h, in_w, _ = original_image.shape
    _, out_h, out_w, _ = grads.shape
    wy = _bilinear_weights(in_h, out_h, align_corners, half_pixel_centers)
    wx = _bilinear_weights(in_w, out_w, align_corners, half_pixel_centers)
    return _separable(grads, wy.T, wx.T).astype(original_image.dtype)


def _resize_nearest_kernel(images, size, *, align_corners: bool, half_pixel_centers: bool, **_):
    height, width = _check_size(size, "ResizeNearestNeighbor")
    _check_centers(align_corners, half_pixel_centers)
    _, in_h, in_w, _ = images.shape
    rows = _nearest_indices(in_h, height, align_corners, half_pixel_centers)
    cols = _nearest_indices(in_w, width, align_corners, half_pixel_centers)
    return images[:, rows][:, :, cols]


def _resize_nearest_grad_kernel(grads, size, *, align_corners: bool,
                                half_pixel_centers: bool, **_):
    in_h, in_w = _check_size(size, "ResizeNearestNeighborGrad")
    _, out_h, out_w, _ = grads.shape
    wy = _nearest_weights(in_h, out_h, align_corners, half_pixel_centers)
    wx = _nearest_weights(in_w, out_w, align_corners, half_pixel_centers)
    return _separable(grads, wy.T, wx.T).astype(grads.dtype)


def _infer_bilinear_grad(inputs, attrs):
    grads, original = inputs
    return [(original.dtype, original.shape)]


def _infer_nearest_grad(inputs, attrs):
    grads, size = inputs
    shape = grads.shape.with_rank(4).as_list() if grads.shape.ndims else [None] * 4
    new_size = static_ints(size) or [None, None]
    return [(grads.dtype, TensorShape([shape[0], new_size[0], new_size[1], shape[3]]))]


define_op("ResizeBilinear",
          infer=lambda inputs, attrs: _infer_resize(inputs, attrs, "ResizeBilinear",
                                                    dtypes.float32),
          kernel=_resize_bilinear_kernel)
define_op("ResizeBilinearGrad", infer=_infer_bilinear_grad,
          kernel=_resize_bilinear_grad_kernel)
define_op("ResizeBicubic",
          infer=lambda inputs, attrs: _infer_resize(inputs, attrs, "ResizeBicubic",
                                                    dtypes.float32),
          kernel=_resize_bicubic_kernel)
define_op("ResizeBicubicGrad", infer=_infer_bilinear_grad, kernel=_resize_bicubic_grad_kernel)
define_op("ResizeArea",
          infer=lambda inputs, attrs: _infer_resize(inputs, attrs, "ResizeArea",
                                                    dtypes.float32),
          kernel=_resize_area_kernel)
NotDifferentiable("ResizeArea")  # TF registers no gradient for it either
define_op("ResizeNearestNeighbor",
          infer=lambda inputs, attrs: _infer_resize(inputs, attrs, "ResizeNearestNeighbor",
                                                    inputs[0].dtype),
          kernel=_resize_nearest_kernel)
define_op("ResizeNearestNeighborGrad", infer=_infer_nearest_grad,
          kernel=_resize_nearest_grad_kernel)


def _attrs(op) -> dict:
    return {"align_corners": op.get_attr("align_corners"),
            "half_pixel_centers": op.get_attr("half_pixel_centers")}


def _spatial_size(image):
    """``[height, width]`` of an NHWC tensor: Python ints when static, else a tensor."""
    size = image.shape.as_list()[1:3] if image.shape.ndims == 4 else [None, None]
    if None not in size:
        return size
    return slice_tensor(shape_of(image), [1], [2])


@RegisterGradient("ResizeBilinear")
def _resize_bilinear_grad(op, grad):
    if op.inputs[0].dtype not in (dtypes.float16, dtypes.bfloat16, dtypes.float32,
                                  dtypes.float64):
        return [None, None]
    return [resize_bilinear_grad(grad, op.inputs[0], **_attrs(op)), None]


@RegisterGradient("ResizeBilinearGrad")
def _resize_bilinear_grad_grad(op, grad):
    # The gradient op is linear in ``grads``: its adjoint is the resize itself.
    return [resize_bilinear(grad, _spatial_size(op.inputs[0]), **_attrs(op)), None]


@RegisterGradient("ResizeBicubic")
def _resize_bicubic_grad(op, grad):
    if op.inputs[0].dtype not in (dtypes.float16, dtypes.bfloat16, dtypes.float32,
                                  dtypes.float64):
        return [None, None]
    graph = graph_for([grad, op.inputs[0]])
    return [graph.create_op("ResizeBicubicGrad", [grad, op.inputs[0]],
                            dict(_attrs(op), T=op.inputs[0].dtype),
                            name="ResizeBicubicGrad").outputs[0], None]


@RegisterGradient("ResizeBicubicGrad")
def _resize_bicubic_grad_grad(op, grad):
    return [resize_bicubic(grad, _spatial_size(op.inputs[0]), **_attrs(op)), None]


@RegisterGradient("ResizeNearestNeighbor")
def _resize_nearest_grad(op, grad):
    return [resize_nearest_neighbor_grad(grad, _spatial_size(op.inputs[0]), **_attrs(op)),
            None]


@RegisterGradient("ResizeNearestNeighborGrad")
def _resize_nearest_grad_grad(op, grad):
    return [resize_nearest_neighbor(grad, _spatial_size(op.inputs[0]), **_attrs(op)), None]


def _resize(op_type: str, images, size, align_corners: bool, half_pixel_centers: bool,
            name: Optional[str]) -> object:
    graph = graph_for([t for t in (images, size) if hasattr(t, "graph")])
    with graph.as_default(), graph.atomic(), graph.name_scope(name or op_type) as scope:
        images = convert_to_tensor(images, name="images")
        if images.dtype not in _RESIZE_TYPES:
            raise TypeError(f"Value passed to parameter 'images' has DataType "
                            f"{images.dtype.name} not in list of allowed values: "
                            f"{_RESIZE_TYPE_NAMES}")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        return graph.create_op(op_type, [images, size],
                               {"T": images.dtype, "align_corners": bool(align_corners),
                                "half_pixel_centers": bool(half_pixel_centers)},
                               scope).outputs[0]


def resize_bilinear(images, size, align_corners: bool = False, name: Optional[str] = None,
                    half_pixel_centers: bool = False):
    """``images`` ``[batch, h, w, c]`` resized to ``size`` ``[new_h, new_w]`` by bilinear
    interpolation; float32 whatever the images' type (TF's ``ResizeBilinear``)."""
    return _resize("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


def resize_bicubic(images, size, align_corners: bool = False, name: Optional[str] = None,
                   half_pixel_centers: bool = False):
    """``images`` ``[batch, h, w, c]`` resized to ``size`` by bicubic interpolation (TF's
    ``ResizeBicubic``); float32 whatever the images' type."""
    return _resize("ResizeBicubic", images, size, align_corners, half_pixel_centers, name)


def resize_area(images, size, align_corners: bool = False, name: Optional[str] = None):
    """``images`` ``[batch, h, w, c]`` resized to ``size`` by area averaging (TF's
    ``ResizeArea``); float32, no gradient."""
    graph = graph_for([t for t in (images, size) if hasattr(t, "graph")])
    with graph.as_default(), graph.atomic(), graph.name_scope(name or "ResizeArea") as scope:
        images = convert_to_tensor(images, name="images")
        if images.dtype not in _RESIZE_TYPES:
            raise TypeError(f"Value passed to parameter 'images' has DataType "
                            f"{images.dtype.name} not in list of allowed values: "
                            f"{_RESIZE_TYPE_NAMES}")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        return graph.create_op("ResizeArea", [images, size],
                               {"T": images.dtype, "align_corners": bool(align_corners)},
                               scope).outputs[0]


def resize_nearest_neighbor(images, size, align_corners: bool = False,
                            name: Optional[str] = None, half_pixel_centers: bool = False):
    """``images`` ``[batch, h, w, c]`` resized to ``size`` by copying the nearest pixel;
    the images' dtype (TF's ``ResizeNearestNeighbor``)."""
    return _resize("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers,
                   name)


def resize_bilinear_grad(grads, original_image, align_corners: bool = False,
                         half_pixel_centers: bool = False, name: Optional[str] = None):
    """The gradient of ``resize_bilinear`` with respect to ``original_image``."""
    graph = graph_for([grads, original_image])
    return graph.create_op("ResizeBilinearGrad", [grads, original_image],
                           {"T": original_image.dtype, "align_corners": bool(align_corners),
                            "half_pixel_centers": bool(half_pixel_centers)},
                           name=name or "ResizeBilinearGrad").outputs[0]


def resize_nearest_neighbor_grad(grads, size, align_corners: bool = False,
                                 half_pixel_centers: bool = False,
                                 name: Optional[str] = None):
    """The gradient of ``resize_nearest_neighbor``: ``grads`` summed back onto the
    ``size`` ``[h, w]`` input pixels they copied."""
    graph = graph_for([grads])
    with graph.as_default():
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        return graph.create_op("ResizeNearestNeighborGrad", [grads, size],
                               {"T": grads.dtype, "align_corners": bool(align_corners),
                                "half_pixel_centers": bool(half_pixel_centers)},
                               name=name or "ResizeNearestNeighborGrad").outputs[0]


class ResizeMethod:
    """The ``method`` values of ``resize_images``."""
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3



def _aspect_preserving_size(images, size) -> list[int]:
    """The largest size within ``size`` keeping the images' aspect ratio (float32 math,
    rounded half to even, as TF's graph computes it)."""
    target = static_ints(size)
    height, width = images.shape.as_list()[1:3]
    if target is None or height is None or width is None:
        raise ValueError("resize_images: preserve_aspect_ratio=True needs a static 'size' "
                         "and static image height and width in gradflow")
    factor = min(np.float32(target[0]) / np.float32(height),
                 np.float32(target[1]) / np.float32(width))
    return [int(np.round(np.float32(factor) * np.float32(height))),
            int(np.round(np.float32(factor) * np.float32(width)))]


def resize_images(images, size, method: int = ResizeMethod.BILINEAR,
                  align_corners: bool = False, preserve_aspect_ratio: bool = False,
                  name: Optional[str] = None):
    """``images`` (``[batch, h, w, c]`` or ``[h, w, c]``) resized to ``size``
    ``[new_h, new_w]`` by ``method`` (TF1's ``tf.image.resize_images``).

    Bilinear results are float32; nearest-neighbour ones keep the images' dtype. When the
    static size already matches, the images come back unchanged (``AREA`` results have no
    gradient, as in TF).
    """
    graph = graph_for([t for t in (images, size) if hasattr(t, "graph")])
    with graph.as_default(), graph.atomic(), graph.name_scope(name or "resize"):
        images = convert_to_tensor(images, name="images")
        if images.shape.ndims is None:
            raise ValueError("'images' contains no shape.")
        batched = images.shape.ndims == 4
        if images.shape.ndims == 3:
            images = expand_dims(images, 0)
        elif not batched:
            raise ValueError("'images' must have either 3 or 4 dimensions.")
        if method not in (ResizeMethod.BILINEAR, ResizeMethod.NEAREST_NEIGHBOR,
                          ResizeMethod.BICUBIC, ResizeMethod.AREA):
            raise ValueError(f"Resize method is not implemented: {method}")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        if not size.shape.is_compatible_with([2]):
            raise ValueError("'size' must be a 1-D Tensor of 2 elements: "
                             "new_height, new_width")
        if preserve_aspect_ratio:
            size = convert_to_tensor(_aspect_preserving_size(images, size),
                                     dtype=dtypes.int32, name="size")
        if static_ints(size) == images.shape.as_list()[1:3]:
            return images if batched else squeeze(images, axis=[0])
        if method == ResizeMethod.BILINEAR:
            images = resize_bilinear(images, size, align_corners=align_corners)
        elif method == ResizeMethod.BICUBIC:
            images = resize_bicubic(images, size, align_corners=align_corners)
        elif method == ResizeMethod.AREA:
            images = resize_area(images, size, align_corners=align_corners)
        else:
            images = resize_nearest_neighbor(images, size, align_corners=align_corners)
        return images if batched else squeeze(images, axis=[0])
