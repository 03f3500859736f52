"""Image colour: dtype conversion, colour spaces and the ``adjust_*``/``random_*``
photometric distortions.

``RGBToHSV``, ``HSVToRGB``, ``AdjustContrastv2``, ``AdjustHue`` and ``AdjustSaturation``
are primitives under TF's type names; the rest is composed from public ops, as TF
composes it. Ops TF gives no gradient raise TF's LookupError when differentiated.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gradflow.framework import dtypes, errors
from gradflow.framework.constant import convert_to_tensor
from gradflow.framework.graph import Tensor, op_scope
from gradflow.framework.registry import NotDifferentiable, RegisterGradient, define_op
from gradflow.ops.array import expand_dims, identity, ones_like, tile
from gradflow.ops.common import FLOATING, apply_op, check_dtype_in
from gradflow.ops.image_resize import atomic, check_image, no_gradient_in_tf
from gradflow.ops.linalg import tensordot
from gradflow.ops.math import (clip_by_value, equal, greater, logical_and, logical_not,
                               logical_or, pow as pow_op, reduce_mean, reduce_prod, reduce_std,
                               rsqrt, where)
from gradflow.ops.primitives import (add, cast, floordiv, maximum, minimum, multiply,
                                     shape as shape_op, stack, subtract, zeros_like)
from gradflow.ops.random import random_uniform

__all__ = ["convert_image_dtype", "rgb_to_grayscale", "grayscale_to_rgb", "rgb_to_hsv",
           "hsv_to_rgb", "rgb_to_yiq", "yiq_to_rgb", "rgb_to_yuv", "yuv_to_rgb",
           "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
           "adjust_gamma", "per_image_standardization", "random_brightness",
           "random_contrast", "random_saturation", "random_hue"]

_TO_YIQ = np.array([[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
                    [0.114, -0.32134392, 0.31119955]], np.float32)
_FROM_YIQ = np.array([[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
                      [0.6208248, -0.64720424, 1.70423049]], np.float32)
_TO_YUV = np.array([[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
                    [0.114, 0.43601035, -0.10001026]], np.float32)
_FROM_YUV = np.array([[1, 1, 1], [0, -0.394642334, 2.03206185],
                      [1.13988303, -0.58062185, 0]], np.float32)
_GRAY = np.array([0.2989, 0.5870, 0.1140], np.float32)


# ------------------------------------------------------------------- dtype conversion
def _saturate_cast(image: Tensor, dtype: dtypes.DType, name: str) -> Tensor:
    """Clips ``image`` to ``dtype``'s range before casting (TF's saturate_cast)."""
    low, high = max(image.dtype.min, dtype.min), min(image.dtype.max, dtype.max)
    if image.dtype.min < dtype.min or image.dtype.max > dtype.max:
        image = clip_by_value(image, np.array(low, image.dtype.as_numpy_dtype),
                              np.array(high, image.dtype.as_numpy_dtype))
    return cast(image, dtype, name=name)


def convert_image_dtype(image, dtype, saturate: bool = False,
                        name: Optional[str] = None) -> Tensor:
    """Converts ``image`` to ``dtype``, rescaling: floats span [0, 1], integers their
    whole positive range. Integer to integer shifts bits; float to integer multiplies by
    ``max + 0.5`` and truncates (clipping first when ``saturate``)."""
    with atomic([image]):
        image = convert_to_tensor(image, name="image")
        dtype = dtypes.as_dtype(dtype)
        if not (dtype.is_floating or dtype.is_integer):
            raise AttributeError("dtype must be either floating point or integer")
        if not (image.dtype.is_floating or image.dtype.is_integer):
            raise AttributeError("image dtype must be either floating point or integer")
        if dtype is image.dtype:
            return identity(image, name=name)
        with op_scope(name, "convert_image", [image]) as scope:
            if image.dtype.is_integer and dtype.is_integer:
                scale_in, scale_out = image.dtype.max, dtype.max
                if scale_in > scale_out:
                    scaled = floordiv(image, np.array((scale_in + 1) // (scale_out + 1),
                                                      image.dtype.as_numpy_dtype))
                    return _saturate_cast(scaled, dtype, scope) if saturate else \
                        cast(scaled, dtype, name=scope)
                return multiply(cast(image, dtype),
                                np.array((scale_out + 1) // (scale_in + 1), dtype.as_numpy_dtype),
                                name=scope)
            if image.dtype.is_floating and dtype.is_floating:
                return cast(image, dtype, name=scope)
            if image.dtype.is_integer:
                return multiply(cast(image, dtype), 1.0 / image.dtype.max, name=scope)
            scaled = multiply(image, dtype.max + 0.5)
            return _saturate_cast(scaled, dtype, scope) if saturate else \
                cast(scaled, dtype, name=scope)


# ---------------------------------------------------------------------- colour spaces
def _linear_map(images, matrix: np.ndarray) -> Tensor:
    """Each pixel's channels times ``matrix`` (TF's ``Tensordot`` with a 'kernel')."""
    with atomic([images]):
        images = convert_to_tensor(images, name="images")
        kernel = convert_to_tensor(matrix.astype(images.dtype.as_numpy_dtype), name="kernel")
        return tensordot(images, kernel, axes=[[images.shape.ndims - 1], [0]])


def rgb_to_yiq(images) -> Tensor:
    """RGB to YIQ (TF's matrix)."""
    return _linear_map(images, _TO_YIQ)


def yiq_to_rgb(images) -> Tensor:
    """YIQ to RGB (TF's matrix)."""
    return _linear_map(images, _FROM_YIQ)


def rgb_to_yuv(images) -> Tensor:
    """RGB to YUV (TF's matrix)."""
    return _linear_map(images, _TO_YUV)


def yuv_to_rgb(images) -> Tensor:
    """YUV to RGB (TF's matrix)."""
    return _linear_map(images, _FROM_YUV)


def rgb_to_grayscale(images, name: Optional[str] = None) -> Tensor:
    """Luma (0.2989 R + 0.5870 G + 0.1140 B) as a 1-channel image of the input dtype."""
    with op_scope(name, "rgb_to_grayscale", [images]) as scope:
        images = convert_to_tensor(images, name="images")
        original = images.dtype
        floats = convert_image_dtype(images, dtypes.float32)
        gray = tensordot(floats, convert_to_tensor(_GRAY), [[-1], [-1]])
        gray = expand_dims(gray, -1)
        return convert_image_dtype(gray, original, name=scope)


def grayscale_to_rgb(images, name: Optional[str] = None) -> Tensor:
    """Repeats a 1-channel image's channel three times."""
    with op_scope(name, "grayscale_to_rgb", [images]) as scope:
        images = convert_to_tensor(images, name="images")
        shape = images.shape
        if shape.ndims is not None:
            if shape.ndims < 2:
                raise ValueError("A grayscale image (shape %s) must be at least "
                                 "two-dimensional." % shape)
            if shape.as_tuple()[-1] not in (None, 1):
                raise ValueError("Last dimension of a grayscale image should be size 1.")
        else:
            raise ValueError("'images' contains no shape.")
        multiples = convert_to_tensor(np.array([1] * (shape.ndims - 1) + [3], np.int32),
                                      name="multiples")
        return tile(images, multiples, name=scope)


def _rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    value = np.max(rgb, axis=-1)
    spread = value - np.min(rgb, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        saturation = np.where(value > 0, spread / value, 0)
        norm = 1 / (6 * spread)
        hue = np.where(r == value, (g - b) * norm,
                       np.where(g == value, (b - r) * norm + 2 / 6, (r - g) * norm + 4 / 6))
    hue = np.where(spread > 0, hue, 0)
    hue = np.where(hue < 0, hue + 1, hue)
    return np.stack([hue, saturation, value], axis=-1)


def _hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    h, s, v = hsv[..., 0] * 6, hsv[..., 1], hsv[..., 2]
    red = np.clip(np.abs(h - 3) - 1, 0, 1)
    green = np.clip(2 - np.abs(h - 2), 0, 1)
    blue = np.clip(2 - np.abs(h - 4), 0, 1)
    return np.stack([v * (1 - s + s * c) for c in (red, green, blue)], axis=-1)


def _color_kernel(fn):
    def kernel(images):
        return fn(images.astype(np.float64)).astype(images.dtype)
    return kernel


def _infer_color(op_type: str):
    def infer(inputs, attrs):
        x = inputs[0]
        if x.dtype not in FLOATING:
            raise TypeError(f"Value passed to parameter 'images' has DataType {x.dtype.name} "
                            "not in list of allowed values: float16, bfloat16, float32, "
                            "float64")
        if x.shape.ndims == 0:
            raise ValueError(f"Shape must be at least rank 1 but is rank 0 for '{op_type}'")
        last = x.shape.as_tuple()[-1] if x.shape.ndims else None
        if last not in (None, 3):
            raise ValueError(f"Dimension must be 3 but is {last} for '{op_type}' (input "
                             f"shape {x.shape})")
        return [(x.dtype, x.shape)]
    return infer


define_op("RGBToHSV", infer=_infer_color("RGBToHSV"), kernel=_color_kernel(_rgb_to_hsv))
define_op("HSVToRGB", infer=_infer_color("HSVToRGB"), kernel=_color_kernel(_hsv_to_rgb))


NotDifferentiable("HSVToRGB")  # as in TF


def _first_match(channels: list, target: Tensor) -> list:
    """One mask per channel: where it equals ``target``, earlier channels winning ties."""
    masks, taken = [], None
    for c in channels:
        hit = equal(c, target)
        mask = hit if taken is None else logical_and(hit, logical_not(taken))
        taken = hit if taken is None else logical_or(taken, hit)
        masks.append(cast(mask, target.dtype))
    return masks


@RegisterGradient("RGBToHSV")
def _rgb_to_hsv_grad(op, grad):
    """The derivative of hue, saturation and value by the channels, region by region
    (which channel is largest picks hue's formula; grey pixels have zero hue)."""
    rgb = op.inputs[0]
    r, g, b = (rgb[..., i] for i in range(3))
    grad_h, grad_s, grad_v = (grad[..., i] for i in range(3))
    high = maximum(maximum(r, g), b)
    low = minimum(minimum(r, g), b)
    spread = high - low
    zero = zeros_like(high)
    safe_high = where(greater(high, zero), high, ones_like(high))
    safe_spread = where(greater(spread, zero), spread, ones_like(spread))
    d_high = _first_match([r, g, b], high)
    d_low = _first_match([r, g, b], low)
    # hue = (u - w) / (6 * spread) + const, with (u, w) = (g, b), (b, r) or (r, g)
    pairs = [(g, b, 1, 2), (b, r, 2, 0), (r, g, 0, 1)]
    saturation = spread / safe_high
    has_spread = cast(greater(spread, zero), rgb.dtype)
    has_value = cast(greater(high, zero), rgb.dtype)
    result = []
    for c in range(3):
        d_hue = zeros_like(high)
        for mask, (u, w, iu, iw) in zip(d_high, pairs, strict=True):
            direct = float(c == iu) - float(c == iw)
            d_hue = d_hue + mask * (direct / (6.0 * safe_spread) - (u - w) * (
                d_high[c] - d_low[c]) / (6.0 * safe_spread * safe_spread))
        d_sat = ((d_high[c] - d_low[c]) - saturation * d_high[c]) / safe_high
        result.append(grad_h * d_hue * has_spread + grad_s * d_sat * has_value
                      + grad_v * d_high[c])
    return [stack(result, axis=-1)]


def rgb_to_hsv(images, name: Optional[str] = None) -> Tensor:
    """RGB in [0, 1] to hue, saturation, value in [0, 1] (one ``RGBToHSV`` op)."""
    with op_scope(name, "RGBToHSV", [images]) as scope:
        images = convert_to_tensor(images, name="images")
        return apply_op("RGBToHSV", [images], name=scope)


def hsv_to_rgb(images, name: Optional[str] = None) -> Tensor:
    """Hue, saturation, value in [0, 1] to RGB (one ``HSVToRGB`` op)."""
    with op_scope(name, "HSVToRGB", [images]) as scope:
        images = convert_to_tensor(images, name="images")
        return apply_op("HSVToRGB", [images], name=scope)


# ------------------------------------------------------------------ adjustment kernels
def _contrast_kernel(images, contrast_factor):
    data = images.astype(np.float64)
    mean = data.mean(axis=(-3, -2), keepdims=True)
    return ((data - mean) * contrast_factor + mean).astype(images.dtype)


def _hsv_adjusted(images: np.ndarray, change) -> np.ndarray:
    if images.shape[-1] != 3:  # TF's kernel checks this when it runs
        raise errors.InvalidArgumentError(None, None, f"input must have 3 channels but "
                                                      f"instead has {images.shape[-1]} channels.")
    hsv = _rgb_to_hsv(images.astype(np.float64))
    change(hsv)
    return _hsv_to_rgb(hsv).astype(images.dtype)


def _hue_kernel(images, delta):
    def shift(hsv):
        hue = np.fmod(hsv[..., 0] + float(delta), 1.0)
        hsv[..., 0] = np.where(hue < 0, hue + 1.0, hue)
    return _hsv_adjusted(images, shift)


def _saturation_kernel(images, scale):
    def scaled(hsv):
        hsv[..., 1] = np.clip(hsv[..., 1] * float(scale), 0.0, 1.0)
    return _hsv_adjusted(images, scaled)


def _infer_adjust(op_type: str, rank: int):
    def infer(inputs, attrs):
        images, factor = inputs
        check_dtype_in(images, (dtypes.float16, dtypes.float32), op_type, "images")
        if images.shape.ndims is not None and images.shape.ndims < rank:
            raise ValueError(f"Shape must be at least rank {rank} but is rank "
                             f"{images.shape.ndims} for '{op_type}' (input shape "
                             f"{images.shape})")
        if factor.shape.ndims not in (None, 0):
            raise ValueError(f"Shape must be rank 0 but is rank {factor.shape.ndims} for "
                             f"the factor of '{op_type}'")
        return [(images.dtype, images.shape)]
    return infer


define_op("AdjustContrastv2", infer=_infer_adjust("AdjustContrastv2", 3),
          kernel=_contrast_kernel)
define_op("AdjustHue", infer=_infer_adjust("AdjustHue", 1), kernel=_hue_kernel)
define_op("AdjustSaturation", infer=_infer_adjust("AdjustSaturation", 1),
          kernel=_saturation_kernel)
for _op_type in ("AdjustContrastv2", "AdjustHue", "AdjustSaturation"):
    no_gradient_in_tf(_op_type)


# ------------------------------------------------------------------- adjustments
def _as_float(image: Tensor) -> Tensor:
    """TF's working image: float16/float32 as they are, anything else as float32."""
    if image.dtype in (dtypes.float16, dtypes.float32):
        return image
    return convert_image_dtype(image, dtypes.float32)


def adjust_brightness(image, delta) -> Tensor:
    """Adds ``delta`` to every channel (on the float image; back to the input dtype,
    saturating)."""
    with op_scope(None, "adjust_brightness", [image, delta]) as scope:
        image = convert_to_tensor(image, name="image")
        original = image.dtype
        floats = _as_float(image)
        adjusted = add(floats, cast(delta, floats.dtype), name=scope)
        return convert_image_dtype(adjusted, original, saturate=True)


def adjust_contrast(images, contrast_factor) -> Tensor:
    """Moves each channel away from (or towards) its mean over the image by
    ``contrast_factor`` (one ``AdjustContrastv2`` op)."""
    with op_scope(None, "adjust_contrast", [images, contrast_factor]) as scope:
        images = convert_to_tensor(images, name="images")
        original = images.dtype
        floats = _as_float(images)
        factor = convert_to_tensor(contrast_factor, dtype=dtypes.float32,
                                   name="contrast_factor")
        adjusted = apply_op("AdjustContrastv2", [floats, factor], name=scope)
        return convert_image_dtype(adjusted, original, saturate=True)


def _hsv_adjust(op_type: str, default: str, arg: str, image, value,
                name: Optional[str]) -> Tensor:
    with op_scope(name, default, [image]):
        image = convert_to_tensor(image, name="image")
        original = image.dtype
        floats = _as_float(image)
        with op_scope(None, op_type, [floats, value]) as inner:
            value = convert_to_tensor(value, dtype=dtypes.float32, name=arg)
            adjusted = apply_op(op_type, [floats, value], name=inner)
        return convert_image_dtype(adjusted, original, saturate=True)


def adjust_hue(image, delta, name: Optional[str] = None) -> Tensor:
    """Rotates the hue of an RGB image by ``delta`` (a fraction of the colour circle)."""
    return _hsv_adjust("AdjustHue", "adjust_hue", "delta", image, delta, name)


def adjust_saturation(image, saturation_factor, name: Optional[str] = None) -> Tensor:
    """Multiplies the saturation of an RGB image by ``saturation_factor`` (clipped)."""
    return _hsv_adjust("AdjustSaturation", "adjust_saturation", "scale", image,
                       saturation_factor, name)


def adjust_gamma(image, gamma=1, gain=1) -> Tensor:
    """``gain * image ** gamma`` on the float image, back in the input dtype."""
    with op_scope(None, "adjust_gamma", [image, gamma, gain]):
        image = convert_to_tensor(image, name="image")
        original = image.dtype
        floats = _as_float(image)
        if isinstance(gamma, (int, float)) and gamma < 0:
            raise ValueError("Gamma should be a non-negative real number.")
        adjusted = multiply(cast(gain, floats.dtype),
                            pow_op(floats, cast(gamma, floats.dtype), name="pow"), name="mul")
        return convert_image_dtype(adjusted, original, saturate=True)


def per_image_standardization(image) -> Tensor:
    """Each image minus its mean, over its standard deviation (at least 1/sqrt(pixels)),
    in float32 (TF converts any input dtype)."""
    with op_scope(None, "per_image_standardization", [image]) as scope:
        image = check_image(image, any_rank=True)
        image = convert_image_dtype(image, dtypes.float32)  # float32 whatever comes in
        pixels = reduce_prod(shape_op(image)[-3:])
        mean = reduce_mean(image, axis=[-1, -2, -3], keepdims=True)
        stddev = reduce_std(image, axis=[-1, -2, -3], keepdims=True)
        floor = rsqrt(cast(pixels, image.dtype))
        return apply_op("RealDiv", [subtract(image, mean, name="sub"), maximum(stddev, floor)],
                        name=scope)


# ----------------------------------------------------------------- random adjustments
def random_brightness(image, max_delta, seed: Optional[int] = None) -> Tensor:
    """``adjust_brightness`` by a delta drawn uniformly from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    with atomic([image]):
        delta = random_uniform([], -max_delta, max_delta, seed=seed)
        return adjust_brightness(image, delta)


def _check_range(lower, upper) -> None:
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")


def random_contrast(image, lower, upper, seed: Optional[int] = None) -> Tensor:
    """``adjust_contrast`` by a factor drawn uniformly from [lower, upper)."""
    _check_range(lower, upper)
    with atomic([image]):
        factor = random_uniform([], lower, upper, seed=seed)
        return adjust_contrast(image, factor)


def random_saturation(image, lower, upper, seed: Optional[int] = None) -> Tensor:
    """``adjust_saturation`` by a factor drawn uniformly from [lower, upper)."""
    _check_range(lower, upper)
    with atomic([image]):
        factor = random_uniform([], lower, upper, seed=seed)
        return adjust_saturation(image, factor)


def random_hue(image, max_delta, seed: Optional[int] = None) -> Tensor:
    """``adjust_hue`` by a delta drawn uniformly from [-max_delta, max_delta)."""
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    with atomic([image]):
        delta = random_uniform([], -max_delta, max_delta, seed=seed)
        return adjust_hue(image, delta)
