"""Image resizing: the ``Resize*`` ops, their gradients, ``CropAndResize`` and the crops
and pads built from slicing.

Every resampling method is separable: along each spatial axis an output row is a
weighted sum of a few input rows. The bicubic and area kernels build that (out, in)
weight matrix per axis (vectorised, from the sample positions TF uses) and apply it
with two tensor products; every gradient is the same two products with the matrices
transposed. Bilinear gathers the four neighbours and interpolates in float32 as TF
does; nearest neighbour gathers, so integer images keep their values.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, op_scope, op_scope_graph
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.framework.tensor_shape import TensorShape
from gradflow.ops.array import expand_dims, identity, pad, slice as slice_op, squeeze
from gradflow.ops.common import REAL_NUMERIC, apply_op, check_dtype_in, static_ints
from gradflow.ops.math import floor, round as round_op
from gradflow.ops.primitives import (cast, floordiv, maximum, minimum, reshape,
                                     shape as shape_op, stack)

__all__ = ["ResizeMethod", "resize_images", "resize", "resize_bilinear",
           "resize_nearest_neighbor", "resize_bicubic", "resize_area", "crop_and_resize",
           "crop_to_bounding_box", "pad_to_bounding_box", "resize_image_with_crop_or_pad",
           "resize_with_crop_or_pad", "resize_image_with_pad", "central_crop",
           "image_dimensions", "check_image", "atomic", "no_gradient_in_tf"]

_RESIZE_TYPES = (dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32,
                 dtypes.int64, dtypes.float16, dtypes.bfloat16, dtypes.float32,
                 dtypes.float64)
# TF's message lists its allowed types in this order, bfloat16 twice
_RESIZE_TYPE_NAMES = ("int8, uint8, int16, uint16, int32, int64, bfloat16, float16, float32, "
                      "float64, bfloat16")
_GRAD_TYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
_CUBIC_TABLE = 1024  # TF samples the cubic kernel at this many fractional offsets


class ResizeMethod:
    """TF1's resize methods (``tf.compat.v1.image.ResizeMethod``)."""
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


# ------------------------------------------------------------------- sample geometry
def _scale(in_size: int, out_size: int, align_corners: bool) -> float:
    """Input pixels per output pixel, in float32 as TF computes it."""
    if align_corners and out_size > 1:
        return float(np.float32(in_size - 1) / np.float32(out_size - 1))
    return float(np.float32(in_size) / np.float32(out_size))


def _positions(in_size: int, out_size: int, align_corners: bool, half_pixel: bool,
               nearest: bool = False) -> np.ndarray:
    """Where each output pixel samples the input axis (float32, TF's scalers)."""
    scale = np.float32(_scale(in_size, out_size, align_corners))
    out = np.arange(out_size, dtype=np.float32)
    if not half_pixel:
        return out * scale
    centred = (out + np.float32(0.5)) * scale
    return centred if nearest else centred - np.float32(0.5)


def _nearest_index(in_size: int, out_size: int, align_corners: bool,
                   half_pixel: bool) -> np.ndarray:
    where = _positions(in_size, out_size, align_corners, half_pixel, nearest=True)
    # TF rounds half away from zero when aligning corners, else takes the floor
    index = np.where(where >= 0, np.floor(where + np.float32(0.5)),
                     np.ceil(where - np.float32(0.5))) if align_corners else np.floor(where)
    return np.clip(index.astype(np.int64), 0, in_size - 1)


def _bilinear_taps(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """The two input pixels each output pixel reads and the float32 weight of the upper."""
    where = _positions(in_size, out_size, align_corners, half_pixel)
    floor = np.floor(where)
    lower = np.clip(floor.astype(np.int64), 0, in_size - 1)
    upper = np.clip(np.ceil(where).astype(np.int64), 0, in_size - 1)
    return lower, upper, (where - floor).astype(np.float32)


def _bilinear_weights(in_size: int, out_size: int, align_corners: bool,
                      half_pixel: bool) -> np.ndarray:
    lower, upper, frac = _bilinear_taps(in_size, out_size, align_corners, half_pixel)
    frac = frac.astype(np.float64)
    weights = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    np.add.at(weights, (rows, lower), 1.0 - frac)
    np.add.at(weights, (rows, upper), frac)
    return weights


def _cubic_table(a: float) -> np.ndarray:
    """The cubic convolution kernel at offsets i/1024 (column 0) and 1 + i/1024 (column 1)."""
    x = np.arange(_CUBIC_TABLE + 1, dtype=np.float32) / np.float32(_CUBIC_TABLE)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = x + 1
    far = ((a * far - 5 * a) * far + 8 * a) * far - 4 * a
    return np.stack([near, far], axis=1).astype(np.float32)


def _bicubic_weights(in_size: int, out_size: int, align_corners: bool,
                     half_pixel: bool) -> np.ndarray:
    where = _positions(in_size, out_size, align_corners, half_pixel)
    base = np.floor(where).astype(np.int64)
    offset = np.rint((where - np.floor(where)) * np.float32(_CUBIC_TABLE)).astype(np.int64)
    table = _cubic_table(-0.5 if half_pixel else -0.75)
    # the four taps at base-1 .. base+2 and their kernel values
    taps = np.stack([base - 1, base, base + 1, base + 2], axis=1)
    values = np.stack([table[offset, 1], table[offset, 0], table[_CUBIC_TABLE - offset, 0],
                       table[_CUBIC_TABLE - offset, 1]], axis=1).astype(np.float64)
    bounded = np.clip(taps, 0, in_size - 1)
    if half_pixel:  # taps outside the image get no weight; the rest are renormalised
        values = np.where(bounded == taps, values, 0.0)
        total = values.sum(axis=1, keepdims=True)
        values = np.where(np.abs(total) >= 1000 * np.finfo(np.float32).tiny,
                          values / np.where(total == 0, 1, total), values)
    weights = np.zeros((out_size, in_size))
    np.add.at(weights, (np.repeat(np.arange(out_size), 4), bounded.reshape(-1)),
              values.reshape(-1))
    return weights


def _area_weights(in_size: int, out_size: int, align_corners: bool) -> np.ndarray:
    """Each output pixel averages the input span [i*scale, (i+1)*scale) it covers."""
    scale = _scale(in_size, out_size, align_corners)
    start = np.arange(out_size) * scale
    stop = start + scale
    cells = np.arange(in_size)
    lo = np.maximum(cells[None, :], start[:, None])
    hi = np.minimum(cells[None, :] + 1, stop[:, None])
    weights = np.clip(hi - lo, 0, None)
    # a span reaching past the edge counts the edge pixel again, as TF clamps indices
    beyond = np.clip(stop - in_size, 0, None)
    weights[:, -1] += beyond
    return weights / scale


def _weights(method: str, in_size: int, out_size: int, align_corners: bool,
             half_pixel: bool) -> np.ndarray:
    if method == "bilinear":
        return _bilinear_weights(in_size, out_size, align_corners, half_pixel)
    if method == "bicubic":
        return _bicubic_weights(in_size, out_size, align_corners, half_pixel)
    return _area_weights(in_size, out_size, align_corners)


def no_gradient_in_tf(op_type: str) -> None:
    """Registers a rule raising TF's LookupError: TF defines no gradient for ``op_type``."""
    def rule(op, *grads):
        raise LookupError(f"No gradient defined for operation'{op.name}' (op type: "
                          f"{op.type}). If you want to pretend this operation is a constant "
                          "in your program, you may insert `tf.stop_gradient`.")
    RegisterGradient(op_type)(rule)


# --------------------------------------------------------------------------- kernels
def _check_size(size: np.ndarray) -> tuple[int, int]:
    height, width = (int(v) for v in np.asarray(size).reshape(-1))
    if height <= 0 or width <= 0:
        raise errors.InvalidArgumentError(
            None, None, f"output dimensions must be positive, got [{height}, {width}]")
    return height, width


def _check_input(images: np.ndarray, align_corners: bool, half_pixel_centers: bool) -> None:
    _check_flags(align_corners, half_pixel_centers)
    if images.shape[1] <= 0 or images.shape[2] <= 0:
        raise errors.InvalidArgumentError(None, None, "input image must be of non-zero size")


def _apply_weights(images: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``rows @ image @ cols.T`` for every image and channel of [N, H, W, C]."""
    tall = np.einsum("oh,nhwc->nowc", rows, images, optimize=True)
    return np.einsum("pw,nowc->nopc", cols, tall, optimize=True)


def _linear_kernel(method: str):
    def kernel(images, size, *, align_corners, half_pixel_centers):
        height, width = _check_size(size)
        _check_input(images, align_corners, half_pixel_centers)
        rows = _weights(method, images.shape[1], height, align_corners, half_pixel_centers)
        cols = _weights(method, images.shape[2], width, align_corners, half_pixel_centers)
        return _apply_weights(images.astype(np.float64), rows, cols).astype(np.float32)
    return kernel


def _linear_grad_kernel(method: str):
    def kernel(grads, original_image, *, align_corners, half_pixel_centers):
        height, width = original_image.shape[1:3]
        rows = _weights(method, height, grads.shape[1], align_corners, half_pixel_centers)
        cols = _weights(method, width, grads.shape[2], align_corners, half_pixel_centers)
        out = _apply_weights(grads.astype(np.float64), rows.T, cols.T)
        return out.astype(original_image.dtype)
    return kernel


def _bilinear_kernel(images, size, *, align_corners, half_pixel_centers):
    """Four gathers and TF's three lerps in float32 (columns first, then rows)."""
    height, width = _check_size(size)
    _check_input(images, align_corners, half_pixel_centers)
    top, bottom, y_frac = _bilinear_taps(images.shape[1], height, align_corners,
                                         half_pixel_centers)
    left, right, x_frac = _bilinear_taps(images.shape[2], width, align_corners,
                                         half_pixel_centers)
    data = images if images.dtype == np.float32 else images.astype(np.float32)
    x_frac = x_frac[:, None]
    rows = data[:, top]
    upper = rows[:, :, left]
    upper += (rows[:, :, right] - upper) * x_frac
    rows = data[:, bottom]
    lower = rows[:, :, left]
    lower += (rows[:, :, right] - lower) * x_frac
    upper += (lower - upper) * y_frac[:, None, None]
    return upper


def _nearest_kernel(images, size, *, align_corners, half_pixel_centers):
    height, width = _check_size(size)
    _check_input(images, align_corners, half_pixel_centers)
    rows = _nearest_index(images.shape[1], height, align_corners, half_pixel_centers)
    cols = _nearest_index(images.shape[2], width, align_corners, half_pixel_centers)
    return images[:, rows][:, :, cols]


def _nearest_grad_kernel(grads, size, *, align_corners, half_pixel_centers):
    height, width = _check_size(size)
    rows = _nearest_index(height, grads.shape[1], align_corners, half_pixel_centers)
    cols = _nearest_index(width, grads.shape[2], align_corners, half_pixel_centers)
    out = np.zeros((grads.shape[0], height, width, grads.shape[3]), grads.dtype)
    np.add.at(out, (slice(None), rows[:, None], cols[None, :]), grads)
    return out


# ------------------------------------------------------------------------- inference
def _check_flags(align_corners: bool, half_pixel_centers: bool) -> None:
    """TF checks the pair when the op runs."""
    if align_corners and half_pixel_centers:
        raise errors.InvalidArgumentError(
            None, None, "If half_pixel_centers is True, align_corners must be False.")


def _infer_resize(out_dtype: Optional[dtypes.DType]):
    def infer(inputs, attrs):
        images, size = inputs
        if images.shape.ndims not in (None, 4):
            raise ValueError(f"Shape must be rank 4 but is rank {images.shape.ndims} for "
                             f"'images' (input shape {images.shape})")
        if size.dtype is not dtypes.int32:
            raise TypeError(f"Value passed to parameter 'size' has DataType "
                            f"{size.dtype.name} not in list of allowed values: int32")
        if size.shape.ndims not in (None, 1):
            raise ValueError(f"Shape must be rank 1 but is rank {size.shape.ndims} for 'size' "
                             f"(input shape {size.shape})")
        length = size.shape.as_tuple()[0] if size.shape.ndims == 1 else None
        if length not in (None, 2):
            raise ValueError(f"Dimension must be 2 but is {length} for 'size' (input shape "
                             f"{size.shape})")
        values = static_ints(size)
        dims = images.shape.as_tuple() or (None, None, None, None)
        hw = tuple(values) if values is not None else (None, None)
        return [(out_dtype or images.dtype, TensorShape([dims[0], *hw, dims[3]]))]
    return infer


def _infer_grad(inputs, attrs):
    grads, original = inputs
    dims = original.shape.as_tuple() or (None,) * 4
    gdims = grads.shape.as_tuple() or (None,) * 4
    return [(original.dtype, TensorShape([gdims[0], dims[1], dims[2], gdims[3]]))]


def _infer_nearest_grad(inputs, attrs):
    grads, size = inputs
    gdims = grads.shape.as_tuple() or (None,) * 4
    hw = tuple(static_ints(size) or (None, None))
    return [(grads.dtype, TensorShape([gdims[0], *hw, gdims[3]]))]


_FLAGS = ("align_corners", "half_pixel_centers")

define_op("ResizeBilinear", infer=_infer_resize(dtypes.float32), kernel=_bilinear_kernel)
define_op("ResizeBicubic", infer=_infer_resize(dtypes.float32),
          kernel=_linear_kernel("bicubic"))
define_op("ResizeArea", infer=_infer_resize(dtypes.float32), kernel=_linear_kernel("area"))
define_op("ResizeNearestNeighbor", infer=_infer_resize(None), kernel=_nearest_kernel)
define_op("ResizeBilinearGrad", infer=_infer_grad, kernel=_linear_grad_kernel("bilinear"))
define_op("ResizeBicubicGrad", infer=_infer_grad, kernel=_linear_grad_kernel("bicubic"))
define_op("ResizeNearestNeighborGrad", infer=_infer_nearest_grad, kernel=_nearest_grad_kernel)
no_gradient_in_tf("ResizeArea")


def _flags(op) -> dict:
    return {key: op.get_attr(key) for key in _FLAGS}


def _linear_grad(grad_type: str):
    def rule(op, grad):
        if op.inputs[0].dtype not in _GRAD_TYPES:
            return [None, None]
        return [apply_op(grad_type, [grad, op.inputs[0]], **_flags(op)), None]
    return rule


RegisterGradient("ResizeBilinear")(_linear_grad("ResizeBilinearGrad"))
RegisterGradient("ResizeBicubic")(_linear_grad("ResizeBicubicGrad"))


@RegisterGradient("ResizeNearestNeighbor")
def _nearest_grad(op, grad):
    size = shape_op(op.inputs[0])[1:3]
    return [apply_op("ResizeNearestNeighborGrad", [grad, size], **_flags(op)), None]


def _adjoint_grad(forward: str):
    """A resize gradient op is linear in its ``grads``: its own gradient is the resize."""
    def rule(op, grad):
        size = shape_op(op.inputs[0])[1:3]
        return [cast(apply_op(forward, [grad, size], **_flags(op)), op.inputs[0].dtype), None]
    return rule


RegisterGradient("ResizeBilinearGrad")(_adjoint_grad("ResizeBilinear"))
RegisterGradient("ResizeBicubicGrad")(_adjoint_grad("ResizeBicubic"))
RegisterGradient("ResizeNearestNeighborGrad")(_adjoint_grad("ResizeNearestNeighbor"))


# ------------------------------------------------------------------- image geometry
def atomic(values):
    """The graph of ``values`` as one transaction, without opening a name scope."""
    return op_scope_graph(values).atomic()


def check_image(image, strict: bool = False, any_rank: bool = False) -> Tensor:
    """Converts ``image`` and checks its static rank with TF's messages: 3 or 4 (a rank
    below 3 is "not three-dimensional" unless ``strict``, as TF's bounding-box functions
    say), or any rank from 3 (``any_rank``)."""
    image = convert_to_tensor(image, name="image")
    ndims = image.shape.ndims
    if ndims is None:
        raise ValueError("'image' contains no shape.")
    if ndims < 3 and not strict:
        raise ValueError(f"'image' (shape {image.shape}) must be at least three-dimensional.")
    if ndims not in (3, 4) and not (any_rank and ndims > 4):
        raise ValueError(f"'image' (shape {image.shape}) must have either 3 or 4 dimensions.")
    return image


def image_dimensions(image: Tensor, needed=None) -> list:
    """Each dimension of ``image``: a Python int where static, else (for the ``needed``
    axes, default all) a scalar int32 tensor; other unknown dimensions stay None. The
    ``Shape`` op is made only when a needed dimension is unknown, as TF makes it."""
    dims = list(image.shape.as_tuple())
    needed = range(len(dims)) if needed is None else [i % len(dims) for i in needed]
    missing = [i for i in needed if dims[i] is None]
    if missing:
        dynamic = shape_op(image)
        for i in missing:
            dims[i] = dynamic[i]
    return dims


def _batched(image: Tensor) -> tuple[Tensor, bool]:
    """A 3-D image as a batch of one; returns whether it was already a batch."""
    if image.shape.ndims == 3:
        return expand_dims(image, 0), False
    return image, True


def _unbatched(image: Tensor, was_batch: bool) -> Tensor:
    return image if was_batch else squeeze(image, axis=[0])


def _static(value) -> bool:
    return isinstance(value, (int, np.integer))


def _check_nonnegative(value, message: str) -> None:
    if _static(value) and value < 0:
        raise ValueError(message)


def _check_positive(value, message: str) -> None:
    if _static(value) and value <= 0:
        raise ValueError(message)


def _int_arg(value, what: str):
    """A bounding-box argument: a Python int, or a scalar int tensor (kept as given)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, float)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int or an int32 tensor, got {value!r}")
    return int(value)


def _vector(items: list, name: str) -> Tensor:
    """A 1-D int32 tensor of Python ints and scalar tensors (a constant when all static)."""
    if all(_static(v) for v in items):
        return convert_to_tensor(np.array(items, np.int32), name=name)
    return stack([cast(v, dtypes.int32) if isinstance(v, Tensor) else v for v in items],
                 name=name)


def _int32(value) -> Tensor:
    return cast(value, dtypes.int32) if isinstance(value, Tensor) else \
        convert_to_tensor(np.int32(value))


def _minimum(a, b):
    if _static(a) and _static(b):
        return min(a, b)
    return minimum(_int32(a), _int32(b))


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width
                         ) -> Tensor:
    """The ``target_height`` x ``target_width`` window of ``image`` (3-D or 4-D) whose top
    left corner is at (``offset_height``, ``offset_width``)."""
    with op_scope(None, "crop_to_bounding_box", [image]):
        image = check_image(image, strict=True)
        image, was_batch = _batched(image)
        offsets = [_int_arg(offset_height, "offset_height"),
                   _int_arg(offset_width, "offset_width")]
        targets = [_int_arg(target_height, "target_height"),
                   _int_arg(target_width, "target_width")]
        _check_nonnegative(offsets[1], "offset_width must be >= 0.")
        _check_nonnegative(offsets[0], "offset_height must be >= 0.")
        _check_positive(targets[1], "target_width must be > 0.")
        _check_positive(targets[0], "target_height must be > 0.")
        _, height, width, _ = image_dimensions(image, (1, 2))
        for size, offset, target, what in ((width, offsets[1], targets[1], "width"),
                                           (height, offsets[0], targets[0], "height")):
            if _static(size) and _static(offset) and _static(target) \
                    and size < target + offset:
                raise ValueError(f"{what} must be >= target + offset.")
        cropped = slice_op(image, _vector([0, *offsets, 0], "stack"),
                           _vector([-1, *targets, -1], "stack_1"))
        _set_known(cropped, image, targets)
        return _unbatched(cropped, was_batch)


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width
                        ) -> Tensor:
    """``image`` (3-D or 4-D) placed at (``offset_height``, ``offset_width``) on a zero
    canvas of ``target_height`` x ``target_width``."""
    with op_scope(None, "pad_to_bounding_box", [image]):
        image = check_image(image, strict=True)
        image, was_batch = _batched(image)
        offsets = [_int_arg(offset_height, "offset_height"),
                   _int_arg(offset_width, "offset_width")]
        targets = [_int_arg(target_height, "target_height"),
                   _int_arg(target_width, "target_width")]
        _, height, width, _ = image_dimensions(image, (1, 2))
        after = []
        for size, offset, target in ((height, offsets[0], targets[0]),
                                     (width, offsets[1], targets[1])):
            if _static(size) and _static(offset) and _static(target):
                after.append(target - offset - size)
            else:
                after.append(_int32(target) - _int32(offset) - _int32(size))
        _check_nonnegative(offsets[0], "offset_height must be >= 0")
        _check_nonnegative(offsets[1], "offset_width must be >= 0")
        _check_nonnegative(after[1], "width must be <= target - offset")
        _check_nonnegative(after[0], "height must be <= target - offset")
        paddings = _vector([0, 0, offsets[0], after[0], offsets[1], after[1], 0, 0], "stack")
        padded = pad(image, _reshape_pairs(paddings))
        _set_known(padded, image, targets)
        return _unbatched(padded, was_batch)


def _set_known(result: Tensor, image: Tensor, targets: list) -> None:
    """States the result's static shape: the batch and depth of ``image``, and the target
    height and width where they are Python ints (as TF does)."""
    dims = image.shape.as_tuple()
    result.set_shape(TensorShape([dims[0], *(t if _static(t) else None for t in targets),
                                  dims[3]]))


def _reshape_pairs(paddings: Tensor) -> Tensor:
    return reshape(paddings, convert_to_tensor(np.array([4, 2], np.int32), name="Reshape/shape"))


def _image_and_target(image, target_height, target_width) -> tuple:
    """The checks the crop-or-pad resizers share: ``image`` as a batch (and whether it was
    one), the checked positive targets, and the image's height and width."""
    image = check_image(image, strict=True)
    image, was_batch = _batched(image)
    target_height = _int_arg(target_height, "target_height")
    target_width = _int_arg(target_width, "target_width")
    _check_positive(target_width, "target_width must be > 0.")
    _check_positive(target_height, "target_height must be > 0.")
    _, height, width, _ = image_dimensions(image, (1, 2))
    return image, was_batch, target_height, target_width, height, width


def resize_image_with_crop_or_pad(image, target_height, target_width) -> Tensor:
    """Crops ``image`` centrally and/or pads it with zeros evenly to the target size."""
    with op_scope(None, "resize_image_with_crop_or_pad", [image]):
        image, was_batch, target_height, target_width, height, width = _image_and_target(
            image, target_height, target_width)
        offsets = {}
        for axis, size, target in (("h", height, target_height), ("w", width, target_width)):
            if _static(size) and _static(target):
                diff = target - size
                offsets[axis] = (max(-diff // 2, 0), max(diff // 2, 0))
            else:
                diff = _int32(target) - _int32(size)
                offsets[axis] = (maximum(floordiv(-diff, 2), 0), maximum(floordiv(diff, 2), 0))
        cropped = crop_to_bounding_box(image, offsets["h"][0], offsets["w"][0],
                                       _minimum(target_height, height),
                                       _minimum(target_width, width))
        resized = pad_to_bounding_box(cropped, offsets["h"][1], offsets["w"][1],
                                      target_height, target_width)
        # TF's result passes through the Identity that holds its shape checks
        resized = identity(resized, name="control_dependency_1")
        return _unbatched(resized, was_batch)


resize_with_crop_or_pad = resize_image_with_crop_or_pad


def central_crop(image, central_fraction: float) -> Tensor:
    """The central ``central_fraction`` of ``image`` along height and width."""
    with op_scope(None, "central_crop", [image]):
        image = convert_to_tensor(image, name="image")
        if image.shape.ndims is not None and image.shape.ndims > 4:
            raise ValueError("`image` should either be a Tensor with rank = 3 or rank = 4. Had "
                             f"rank = {image.shape.ndims}.")
        image = check_image(image)
        fraction = float(central_fraction)
        if fraction <= 0.0 or fraction > 1.0:
            raise ValueError("central_fraction must be within (0, 1]")
        if fraction == 1.0:
            return image
        dims = image_dimensions(image, (-3, -2))
        height, width = dims[-3], dims[-2]
        starts, sizes = [], []
        for size in (height, width):
            if _static(size):
                start = int((size - size * fraction) / 2)
                starts.append(start)
                sizes.append(size - start * 2)
            else:
                whole = cast(size, dtypes.float64)
                start = cast((whole - whole * fraction) / 2.0, dtypes.int32)
                starts.append(start)
                sizes.append(size - start * 2)
        lead = [0] if image.shape.ndims == 4 else []
        lead_size = [-1] if image.shape.ndims == 4 else []
        return slice_op(image, _vector(lead + starts + [0], "stack"),
                        _vector(lead_size + sizes + [-1], "stack_1"))


# ------------------------------------------------------------------------- resizing
def _resize_op(op_type: str, images, size, align_corners: bool, half_pixel_centers: bool,
               name) -> Tensor:
    """One ``Resize*`` op on a batch; ``name`` is the exact op name (ends in '/')."""
    images = convert_to_tensor(images, name="images")
    if images.dtype not in _RESIZE_TYPES:
        raise TypeError(f"Value passed to parameter 'images' has DataType {images.dtype.name} "
                        f"not in list of allowed values: {_RESIZE_TYPE_NAMES}")
    size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
    return apply_op(op_type, [images, size], name=name, align_corners=bool(align_corners),
                    half_pixel_centers=bool(half_pixel_centers))


def _resize_builder(op_type: str, what: str):
    def build(images, size, align_corners: bool = False, name: Optional[str] = None,
              half_pixel_centers: bool = False) -> Tensor:
        with op_scope(name, op_type, [images, size]) as scope:
            return _resize_op(op_type, images, size, align_corners, half_pixel_centers, scope)
    build.__name__ = build.__qualname__ = what
    build.__doc__ = (f"TF1's ``image.{what}``: resizes images [N, H, W, C] to ``size`` "
                     f"(one ``{op_type}`` op).")
    return build


resize_bilinear = _resize_builder("ResizeBilinear", "resize_bilinear")
resize_nearest_neighbor = _resize_builder("ResizeNearestNeighbor", "resize_nearest_neighbor")
resize_bicubic = _resize_builder("ResizeBicubic", "resize_bicubic")
def resize_area(images, size, align_corners: bool = False, name: Optional[str] = None
                ) -> Tensor:
    """TF1's ``image.resize_area``: each output pixel averages the input area it covers
    (one ``ResizeArea`` op; TF gives it no ``half_pixel_centers``)."""
    with op_scope(name, "ResizeArea", [images, size]) as scope:
        return _resize_op("ResizeArea", images, size, align_corners, False, scope)

_METHODS = {ResizeMethod.BILINEAR: "ResizeBilinear",
            ResizeMethod.NEAREST_NEIGHBOR: "ResizeNearestNeighbor",
            ResizeMethod.BICUBIC: "ResizeBicubic", ResizeMethod.AREA: "ResizeArea",
            "bilinear": "ResizeBilinear", "nearest": "ResizeNearestNeighbor",
            "bicubic": "ResizeBicubic", "area": "ResizeArea"}
_V2_ONLY = ("lanczos3", "lanczos5", "gaussian", "mitchellcubic")


def _method_op(method) -> str:
    key = method if isinstance(method, str) else int(method) \
        if isinstance(method, (int, np.integer)) and not isinstance(method, bool) else None
    if key in _V2_ONLY:
        raise ValueError(f"method: {key!r} (TF2's scale-and-translate resize) is not "
                         "supported by gradflow's TF1 resize_images")
    if key not in _METHODS:
        raise ValueError(f"Resize method is not implemented: {method}")
    return _METHODS[key]


def _aspect_size(height, width, size: Tensor):
    """TF's ``preserve_aspect_ratio`` size: the largest that fits ``size`` and keeps the
    height:width ratio (rounded half to even, in float32)."""
    target = static_ints(size)
    if _static(height) and _static(width) and target is not None:
        scale = min(np.float32(target[0]) / np.float32(height),
                    np.float32(target[1]) / np.float32(width))
        return convert_to_tensor(np.array([np.round(np.float32(height) * scale),
                                           np.round(np.float32(width) * scale)], np.int32),
                                 name="size")
    wanted = cast(size, dtypes.float32)
    have = [cast(_int32(height), dtypes.float32), cast(_int32(width), dtypes.float32)]
    scale = minimum(wanted[0] / have[0], wanted[1] / have[1])
    return stack([cast(round_op(have[0] * scale), dtypes.int32),
                  cast(round_op(have[1] * scale), dtypes.int32)], name="size")


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners: bool = False,
                  preserve_aspect_ratio: bool = False, name: Optional[str] = None) -> Tensor:
    """TF1's ``image.resize_images``: resizes a 3-D image or 4-D batch to ``size`` with
    ``method``; bilinear, bicubic and area give float32, nearest keeps the dtype. A size
    equal to the static input size returns ``images`` unchanged, as TF does."""
    with op_scope(name, "resize", [images, size]):
        images = convert_to_tensor(images, name="images")
        if images.shape.ndims is None:
            raise ValueError("'images' contains no shape.")
        if images.shape.ndims not in (3, 4):
            raise ValueError("'images' must have either 3 or 4 dimensions.")
        op_type = _method_op(method)
        images, was_batch = _batched(images)
        _, height, width, _ = image_dimensions(images, (1, 2))
        try:
            if not isinstance(size, Tensor) and np.asarray(size).dtype.kind not in "iu":
                raise TypeError("size")
            size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        except (TypeError, ValueError):
            raise ValueError("'size' must be a 1-D int32 Tensor") from None
        if not size.shape.is_compatible_with(TensorShape([2])):
            raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, "
                             "new_width")
        if preserve_aspect_ratio:
            size = _aspect_size(height, width, size)
        target = static_ints(size)
        if target is not None and target == [height, width]:
            return _unbatched(images, was_batch)
        resized = _resize_op(op_type, images, size, align_corners, False, op_type)
        return _unbatched(resized, was_batch)


resize = resize_images


def resize_image_with_pad(image, target_height: int, target_width: int,
                          method=ResizeMethod.BILINEAR, align_corners: bool = False) -> Tensor:
    """Resizes ``image`` to fit the target keeping its aspect ratio, then pads it with
    zeros (centred) to exactly ``target_height`` x ``target_width``."""
    with op_scope(None, "resize_image_with_pad", [image]):
        image, was_batch, target_height, target_width, height, width = _image_and_target(
            image, target_height, target_width)
        if all(_static(v) for v in (height, width, target_height, target_width)):
            ratio = max(np.float32(width) / np.float32(target_width),
                        np.float32(height) / np.float32(target_height))
            new_height = np.float32(height) / ratio
            new_width = np.float32(width) / ratio
            size = [int(np.floor(new_height)), int(np.floor(new_width))]
            pad_height = max(0, int(np.floor((np.float32(target_height) - new_height) / 2)))
            pad_width = max(0, int(np.floor((np.float32(target_width) - new_width) / 2)))
        else:  # the same arithmetic with ops, in float32
            have = [cast(_int32(v), dtypes.float32) for v in (height, width)]
            want = [cast(_int32(v), dtypes.float32) for v in (target_height, target_width)]
            ratio = maximum(have[1] / want[1], have[0] / want[0])
            new = [have[0] / ratio, have[1] / ratio]
            size = stack([cast(floor(v), dtypes.int32) for v in new])
            pad_height, pad_width = (maximum(cast(floor((w - n) / 2.0), dtypes.int32), 0)
                                     for w, n in zip(want, new, strict=True))
        resized = resize_images(image, size, method=method, align_corners=align_corners)
        padded = pad_to_bounding_box(resized, pad_height, pad_width, target_height,
                                     target_width)
        return _unbatched(padded, was_batch)


# -------------------------------------------------------------------- crop and resize
def _crop_samples(boxes: np.ndarray, crop: int, size: int, lo: int, hi: int):
    """Sample positions [B, crop] along one axis (box corners ``lo``/``hi`` are columns
    of ``boxes``) and d(position)/d(corner) for each corner."""
    start, stop = boxes[:, lo].astype(np.float32), boxes[:, hi].astype(np.float32)
    span = np.float32(size - 1)
    if crop > 1:  # float32 in TF's order, so samples on a pixel centre round as TF's do
        t = np.arange(crop, dtype=np.float32)
        step = (stop - start) * span / np.float32(crop - 1)
        where = start[:, None] * span + t[None, :] * step[:, None]
        frac = (t / np.float32(crop - 1)).astype(np.float64)
        d_start = np.broadcast_to((1 - frac) * span, where.shape)
        d_stop = np.broadcast_to(frac * span, where.shape)
    else:
        where = (np.float32(0.5) * (start + stop) * span)[:, None]
        d_start = d_stop = np.full(where.shape, 0.5 * span)
    where = where.astype(np.float64)
    inside = (where >= 0) & (where <= span)
    return where, inside, d_start, d_stop


def _crop_geometry(boxes, box_ind, image_shape, crop_size):
    """Checks a crop_and_resize call; the row and column samples of every box."""
    _, height, width, _ = image_shape
    crop_h, crop_w = (int(v) for v in crop_size)
    if crop_h <= 0 or crop_w <= 0:
        raise errors.InvalidArgumentError(None, None, "crop dimensions must be positive")
    if np.any((box_ind < 0) | (box_ind >= image_shape[0])):
        raise errors.InvalidArgumentError(
            None, None, f"box_index has values outside [0, {image_shape[0]})")
    ys = _crop_samples(boxes, crop_h, height, 0, 2)
    xs = _crop_samples(boxes, crop_w, width, 1, 3)
    return ys, xs


def _corners(where: np.ndarray, size: int, method: str):
    if method == "nearest":
        index = np.clip(np.floor(where + 0.5), 0, size - 1).astype(np.int64)
        return index, index, np.zeros_like(where)
    low = np.floor(where)
    return (np.clip(low, 0, size - 1).astype(np.int64),
            np.clip(np.ceil(where), 0, size - 1).astype(np.int64), where - low)


def _crop_and_resize_kernel(image, boxes, box_ind, crop_size, *, method, extrapolation_value):
    (y, y_in, _, _), (x, x_in, _, _) = _crop_geometry(boxes, box_ind, image.shape, crop_size)
    top, bottom, y_frac = _corners(y, image.shape[1], method)
    left, right, x_frac = _corners(x, image.shape[2], method)
    b = box_ind[:, None, None]
    data = image.astype(np.float64)

    def at(rows, cols):
        return data[b, rows[:, :, None], cols[:, None, :]]

    xf = x_frac[:, None, :, None]
    upper = at(top, left) + (at(top, right) - at(top, left)) * xf
    lower = at(bottom, left) + (at(bottom, right) - at(bottom, left)) * xf
    out = upper + (lower - upper) * y_frac[:, :, None, None]
    inside = (y_in[:, :, None] & x_in[:, None, :])[..., None]
    return np.where(inside, out, extrapolation_value).astype(np.float32)


def _crop_image_grad_kernel(grads, boxes, box_ind, image_size, *, T, method):
    shape = tuple(int(v) for v in image_size)
    (y, y_in, _, _), (x, x_in, _, _) = _crop_geometry(boxes, box_ind, shape, grads.shape[1:3])
    top, bottom, y_frac = _corners(y, shape[1], method)
    left, right, x_frac = _corners(x, shape[2], method)
    inside = (y_in[:, :, None] & x_in[:, None, :])[..., None]
    g = np.where(inside, grads.astype(np.float64), 0.0)
    out = np.zeros(shape)
    b = box_ind[:, None, None]
    yf, xf = y_frac[:, :, None, None], x_frac[:, None, :, None]
    for rows, cols, weight in ((top, left, (1 - yf) * (1 - xf)), (top, right, (1 - yf) * xf),
                               (bottom, left, yf * (1 - xf)), (bottom, right, yf * xf)):
        np.add.at(out, (b, rows[:, :, None], cols[:, None, :]), g * weight)
    return out.astype(T.as_numpy_dtype)


def _crop_boxes_grad_kernel(grads, image, boxes, box_ind, *, method):
    (y, y_in, dy1, dy2), (x, x_in, dx1, dx2) = _crop_geometry(
        boxes, box_ind, image.shape, grads.shape[1:3])
    top, bottom, y_frac = _corners(y, image.shape[1], method)
    left, right, x_frac = _corners(x, image.shape[2], method)
    data = image.astype(np.float64)
    b = box_ind[:, None, None]

    def at(rows, cols):
        return data[b, rows[:, :, None], cols[:, None, :]]

    tl, tr, bl, br = at(top, left), at(top, right), at(bottom, left), at(bottom, right)
    yf, xf = y_frac[:, :, None, None], x_frac[:, None, :, None]
    inside = (y_in[:, :, None] & x_in[:, None, :])[..., None]
    g = np.where(inside, grads.astype(np.float64), 0.0)
    along_y = (g * ((1 - xf) * (bl - tl) + xf * (br - tr))).sum(axis=(2, 3))
    along_x = (g * ((1 - yf) * (tr - tl) + yf * (br - bl))).sum(axis=(1, 3))
    out = np.stack([(along_y * dy1).sum(1), (along_x * dx1).sum(1),
                    (along_y * dy2).sum(1), (along_x * dx2).sum(1)], axis=1)
    return out.astype(np.float32)


def _infer_crop_and_resize(inputs, attrs):
    image, boxes, box_ind, crop_size = inputs
    if attrs["method"] not in ("bilinear", "nearest"):
        raise ValueError(f"method must be 'bilinear' or 'nearest', got {attrs['method']!r}")
    for t, rank, what in ((image, 4, "image"), (boxes, 2, "boxes"), (box_ind, 1, "box_ind")):
        if t.shape.ndims not in (None, rank):
            raise ValueError(f"Shape must be rank {rank} but is rank {t.shape.ndims} for "
                             f"'{what}' of 'CropAndResize' (input shape {t.shape})")
    count = boxes.shape.as_tuple()[0] if boxes.shape.ndims else None
    depth = image.shape.as_tuple()[3] if image.shape.ndims else None
    hw = tuple(static_ints(crop_size) or (None, None))
    return [(dtypes.float32, TensorShape([count, *hw, depth]))]


define_op("CropAndResize", infer=_infer_crop_and_resize, kernel=_crop_and_resize_kernel)
define_op("CropAndResizeGradImage", kernel=_crop_image_grad_kernel, infer=lambda inputs, attrs: [
    (attrs["T"], TensorShape(static_ints(inputs[3]) or [None] * 4))])
define_op("CropAndResizeGradBoxes", kernel=_crop_boxes_grad_kernel, infer=lambda inputs, attrs: [
    (dtypes.float32, inputs[2].shape)])
NotDifferentiable("CropAndResizeGradImage")
NotDifferentiable("CropAndResizeGradBoxes")


@RegisterGradient("CropAndResize")
def _crop_and_resize_grad(op, grad):
    image, boxes, box_ind, _ = op.inputs
    method = op.get_attr("method")
    image_grad = None
    if image.dtype in _GRAD_TYPES:
        image_grad = apply_op("CropAndResizeGradImage", [grad, boxes, box_ind, shape_op(image)],
                              T=image.dtype, method=method)
    boxes_grad = apply_op("CropAndResizeGradBoxes", [grad, image, boxes, box_ind],
                          method=method)
    return [image_grad, boxes_grad, None, None]


def crop_and_resize(image, boxes, box_ind=None, crop_size=None, method: str = "bilinear",
                    extrapolation_value: float = 0.0, name: Optional[str] = None,
                    box_indices=None) -> Tensor:
    """Crops boxes (normalised [y1, x1, y2, x2]) out of a batch of images and resizes each
    to ``crop_size`` (one ``CropAndResize`` op; float32 [num_boxes, h, w, depth])."""
    if box_ind is not None and box_indices is not None:
        raise ValueError("Cannot specify both 'box_ind' and 'box_indices'.")
    box_ind = box_indices if box_ind is None else box_ind
    if box_ind is None or crop_size is None:
        raise ValueError("crop_and_resize needs box_ind (box_indices) and crop_size")
    with op_scope(name, "CropAndResize", [image, boxes, box_ind, crop_size]) as scope:
        image = convert_to_tensor(image, name="image")
        check_dtype_in(image, REAL_NUMERIC, "CropAndResize", "image")
        boxes = convert_to_tensor(boxes, dtype=dtypes.float32, name="boxes")
        box_ind = convert_to_tensor(box_ind, dtype=dtypes.int32, name="box_ind")
        crop_size = convert_to_tensor(crop_size, dtype=dtypes.int32, name="crop_size")
        return apply_op("CropAndResize", [image, boxes, box_ind, crop_size], name=scope,
                        method=str(method), extrapolation_value=float(extrapolation_value))
