"""TF1's image preprocessing (the CIFAR-10 tutorial's and its kin), from public ops.

Cropping and padding (``crop_to_bounding_box``, ``pad_to_bounding_box``,
``resize_image_with_crop_or_pad``, ``central_crop``, ``random_crop``), flips (also at
random), brightness and contrast (also at random), ``per_image_standardization``,
``rgb_to_grayscale``/``grayscale_to_rgb`` and ``convert_image_dtype``. Images are
``[height, width, channels]`` or batches ``[batch, height, width, channels]``; sizes and
offsets are Python ints (a tensor raises a ValueError naming the argument). Each
function opens TF's name scope (``per_image_standardization``, ``adjust_contrast``...);
the ops inside are gradflow's.
"""
from __future__ import annotations

from typing import Optional

from gradflow.framework import dtypes
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, get_default_graph
from gradflow.ops.array import (expand_dims, identity, pad, reshape, reverse_v2, slice,
                                squeeze, tile)
from gradflow.ops.linalg import tensordot
from gradflow.ops.math import (add, cast, clip_by_value, less, maximum, multiply,
                               reduce_mean, rsqrt, sqrt, square, where_v2)
from gradflow.ops.random import random_uniform

__all__ = ["per_image_standardization", "crop_to_bounding_box", "pad_to_bounding_box",
           "resize_image_with_crop_or_pad", "central_crop", "random_crop", "flip_left_right",
           "flip_up_down", "random_flip_left_right", "random_flip_up_down",
           "adjust_brightness", "adjust_contrast", "random_brightness", "random_contrast",
           "rgb_to_grayscale", "grayscale_to_rgb", "convert_image_dtype"]


def _image(image, at_least: int = 3) -> Tensor:
    image = convert_to_tensor(image, name="image")
    rank = image.shape.ndims
    if rank is None or rank < at_least:
        raise ValueError(f"'image' (shape {image.shape}) must be at least "
                         f"{'three' if at_least == 3 else at_least}-dimensional.")
    if rank > 4:
        raise ValueError(f"'image' (shape {image.shape}) must have either 3 or 4 dimensions.")
    return image


def _int(value, what: str) -> int:
    if isinstance(value, Tensor):
        raise ValueError(f"{what}: gradflow needs a Python int here, got a tensor {value.name}")
    return int(value)


def _static_hw(image: Tensor, what: str) -> tuple[int, int]:
    height, width = image.shape.as_list()[-3:-1]
    if height is None or width is None:
        raise ValueError(f"{what}: gradflow needs the image's static height and width, got "
                         f"shape {image.shape}")
    return height, width


def convert_image_dtype(image, dtype, saturate: bool = False, name: Optional[str] = None):
    """``image`` in ``dtype``, rescaled: integer images span ``[0, MAX]``, float ones
    ``[0, 1)``; ``saturate`` clips before a float-to-integer conversion."""
    graph = get_default_graph()
    dtype = dtypes.as_dtype(dtype)
    with graph.atomic(), graph.name_scope(name or "convert_image") as scope:
        image = convert_to_tensor(image, name="image")
        source = image.dtype
        if source is dtype:
            return identity(image, name=scope)
        if source.is_integer and dtype.is_integer:
            scale = (source.max + 1) // (dtype.max + 1) if source.max > dtype.max \
                else (dtype.max + 1) // (source.max + 1)
            if source.max > dtype.max:
                return cast(image // scale, dtype, name=scope)
            return multiply(cast(image, dtype), scale, name=scope)
        if source.is_floating and dtype.is_floating:
            return cast(image, dtype, name=scope)
        if source.is_integer:  # to float: divide by the integer type's maximum
            return multiply(cast(image, dtype), 1.0 / source.max, name=scope)
        scaled = image * (dtype.max + 0.5)
        if saturate:
            scaled = clip_by_value(scaled, float(dtype.min), float(dtype.max))
        return cast(scaled, dtype, name=scope)


def _float_image(image: Tensor) -> tuple[Tensor, dtypes.DType]:
    return (image if image.dtype in (dtypes.float16, dtypes.float32, dtypes.float64)
            else convert_image_dtype(image, dtypes.float32)), image.dtype


def per_image_standardization(image, name: Optional[str] = None):
    """Each image scaled to zero mean and unit variance: ``(x - mean) /
    max(stddev, 1 / sqrt(number of values))`` over its height, width and channels."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(name or "per_image_standardization") as scope:
        image = _image(image)
        image = convert_image_dtype(image, dtypes.float32) if image.dtype.is_integer \
            else image
        height, width, channels = image.shape.as_list()[-3:]
        axes = [-1, -2, -3]
        mean = reduce_mean(image, axis=axes, keepdims=True)
        variance = reduce_mean(square(image - mean), axis=axes, keepdims=True)
        if None in (height, width, channels):
            raise ValueError("per_image_standardization: gradflow needs the image's static "
                             f"height, width and channels, got shape {image.shape}")
        min_stddev = rsqrt(cast(height * width * channels, image.dtype))
        return multiply(image - mean, 1.0 / maximum(sqrt(variance), min_stddev), name=scope)


def _batched(image: Tensor) -> tuple[Tensor, bool]:
    return (image, True) if image.shape.ndims == 4 else (expand_dims(image, 0), False)


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The ``target_height x target_width`` window of ``image`` at the offset."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope("crop_to_bounding_box"):
        image = _image(image)
        oh, ow = _int(offset_height, "offset_height"), _int(offset_width, "offset_width")
        th, tw = _int(target_height, "target_height"), _int(target_width, "target_width")
        height, width = _static_hw(image, "crop_to_bounding_box")
        if ow < 0:
            raise ValueError("offset_width must be >= 0.")
        if oh < 0:
            raise ValueError("offset_height must be >= 0.")
        if tw <= 0:
            raise ValueError("target_width must be > 0.")
        if th <= 0:
            raise ValueError("target_height must be > 0.")
        if width < tw + ow:
            raise ValueError("width must be >= target + offset.")
        if height < th + oh:
            raise ValueError("height must be >= target + offset.")
        batch, was_batched = _batched(image)
        cropped = slice(batch, [0, oh, ow, 0], [-1, th, tw, -1])
        return cropped if was_batched else squeeze(cropped, axis=[0])


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """``image`` placed at the offset in a zero ``target_height x target_width`` canvas."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope("pad_to_bounding_box"):
        image = _image(image)
        oh, ow = _int(offset_height, "offset_height"), _int(offset_width, "offset_width")
        th, tw = _int(target_height, "target_height"), _int(target_width, "target_width")
        height, width = _static_hw(image, "pad_to_bounding_box")
        after_h, after_w = th - oh - height, tw - ow - width
        if oh < 0:
            raise ValueError("offset_height must be >= 0")
        if ow < 0:
            raise ValueError("offset_width must be >= 0")
        if after_h < 0:
            raise ValueError("height must be <= target - offset")
        if after_w < 0:
            raise ValueError("width must be <= target - offset")
        batch, was_batched = _batched(image)
        padded = pad(batch, [[0, 0], [oh, after_h], [ow, after_w], [0, 0]])
        return padded if was_batched else squeeze(padded, axis=[0])


def resize_image_with_crop_or_pad(image, target_height, target_width):
    """``image`` cropped and/or zero-padded, centred, to ``target_height x
    target_width``."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope("resize_image_with_crop_or_pad"):
        image = _image(image)
        th, tw = _int(target_height, "target_height"), _int(target_width, "target_width")
        if tw <= 0:
            raise ValueError("target_width must be > 0.")
        if th <= 0:
            raise ValueError("target_height must be > 0.")
        height, width = _static_hw(image, "resize_image_with_crop_or_pad")
        cropped = crop_to_bounding_box(image, max((height - th) // 2, 0),
                                       max((width - tw) // 2, 0), min(th, height),
                                       min(tw, width))
        return pad_to_bounding_box(cropped, max((th - height) // 2, 0),
                                   max((tw - width) // 2, 0), th, tw)


def central_crop(image, central_fraction: float):
    """The centred ``central_fraction`` of ``image``'s height and width."""
    if central_fraction <= 0.0 or central_fraction > 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope("central_crop"):
        image = _image(image)
        if central_fraction == 1.0:
            return image
        height, width = _static_hw(image, "central_crop")
        top = int((height - height * central_fraction) / 2)
        left = int((width - width * central_fraction) / 2)
        batch, was_batched = _batched(image)
        cropped = slice(batch, [0, top, left, 0], [-1, height - 2 * top, width - 2 * left, -1])
        return cropped if was_batched else squeeze(cropped, axis=[0])


def random_crop(value, size, seed: Optional[int] = None, name: Optional[str] = None):
    """A window of shape ``size`` of ``value`` at a uniformly random offset."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(name or "random_crop") as scope:
        value = convert_to_tensor(value, name="value")
        size = [_int(s, "size") for s in size]
        shape = value.shape.as_list()
        if value.shape.ndims is None or None in shape or len(shape) != len(size):
            raise ValueError(f"random_crop: gradflow needs 'value' of static shape and rank "
                             f"len(size) = {len(size)}, got {value.shape}")
        if any(s > d for s, d in zip(size, shape, strict=True)):
            raise ValueError(f"random_crop: size {size} is larger than the value's shape "
                             f"{shape}")
        limit = convert_to_tensor([d - s + 1 for d, s in zip(shape, size, strict=True)],
                                  dtype=dtypes.int32)
        unit = random_uniform([len(size)], dtype=dtypes.float32, seed=seed)
        offset = cast(unit * cast(limit, dtypes.float32), dtypes.int32)
        return slice(value, offset, size, name=scope)


def flip_left_right(image):
    """``image`` mirrored along its width."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope("flip_left_right"):
        image = _image(image)
        return reverse_v2(image, [image.shape.ndims - 2])


def flip_up_down(image):
    """``image`` mirrored along its height."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope("flip_up_down"):
        image = _image(image)
        return reverse_v2(image, [image.shape.ndims - 3])


def _random_flip(image, axis_from_end: int, seed, scope: str):
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(scope):
        image = _image(image)
        rank = image.shape.ndims
        flipped = reverse_v2(image, [rank - axis_from_end])
        count = [image.shape.as_list()[0]] if rank == 4 else []
        if rank == 4 and count[0] is None:
            raise ValueError(f"{scope}: gradflow needs the batch size of a batch of images")
        draws = random_uniform(count, dtype=dtypes.float32, seed=seed)
        mirror = less(draws, 0.5)
        if rank == 4:
            mirror = reshape(mirror, [-1, 1, 1, 1])
        return where_v2(mirror, flipped, image)


def random_flip_left_right(image, seed: Optional[int] = None):
    """``image`` (each image of a batch) mirrored along its width with probability 1/2."""
    return _random_flip(image, 2, seed, "random_flip_left_right")


def random_flip_up_down(image, seed: Optional[int] = None):
    """``image`` (each image of a batch) mirrored along its height with probability 1/2."""
    return _random_flip(image, 3, seed, "random_flip_up_down")


def adjust_brightness(image, delta):
    """``image + delta`` (integer images through floats in ``[0, 1]``)."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope("adjust_brightness"):
        image = convert_to_tensor(image, name="image")
        flt, original = _float_image(image)
        adjusted = add(flt, cast(delta, flt.dtype), name="Add")
        return convert_image_dtype(adjusted, original, saturate=True) \
            if original is not flt.dtype else adjusted


def adjust_contrast(images, contrast_factor):
    """``(x - mean) * contrast_factor + mean`` with the mean of each channel of each
    image (integer images through floats in ``[0, 1]``)."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope("adjust_contrast"):
        images = _image(images)
        flt, original = _float_image(images)
        mean = reduce_mean(flt, axis=[-3, -2], keepdims=True)
        adjusted = (flt - mean) * cast(contrast_factor, flt.dtype) + mean
        return convert_image_dtype(adjusted, original, saturate=True) \
            if original is not flt.dtype else adjusted


def random_brightness(image, max_delta: float, seed: Optional[int] = None):
    """``adjust_brightness`` by a delta uniform in ``[-max_delta, max_delta)``."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def random_contrast(image, lower: float, upper: float, seed: Optional[int] = None):
    """``adjust_contrast`` by a factor uniform in ``[lower, upper)``."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    factor = random_uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, factor)


def rgb_to_grayscale(images, name: Optional[str] = None):
    """The luma ``0.2989 R + 0.5870 G + 0.1140 B``, keeping a channel axis of size 1."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(name or "rgb_to_grayscale") as scope:
        images = convert_to_tensor(images, name="images")
        flt, original = _float_image(images)
        weights = convert_to_tensor([0.2989, 0.5870, 0.1140], dtype=flt.dtype)
        gray = expand_dims(tensordot(flt, weights, [[-1], [-1]]), -1)
        return convert_image_dtype(gray, original, name=scope)


def grayscale_to_rgb(images, name: Optional[str] = None):
    """The one channel of ``images`` repeated three times."""
    graph = get_default_graph()
    with graph.atomic(), graph.name_scope(name or "grayscale_to_rgb") as scope:
        images = convert_to_tensor(images, name="images")
        rank = images.shape.ndims
        if rank is None:
            raise ValueError("grayscale_to_rgb: 'images' needs a known rank in gradflow")
        return tile(images, [1] * (rank - 1) + [3], name=scope)

